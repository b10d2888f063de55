// The review screen from the keyboard (templates/admin/extraction/review_job.html).
//
// Navigation mode (no input focused): j/ArrowDown and k/ArrowUp move the current field, a
// accepts it as it is and moves on, c/Enter edits it, Shift+A approves, Shift+R rejects (a
// rejection needs a comment: the comment box is focused while it is empty), n opens the next
// job of the queue. In an input, Escape (or Enter in a field's value) returns to navigation:
// Enter must never submit the form from a field, or a half-typed correction would be approved.
//
// A correction is evidenced by selecting printed text in a page's text view: the selection
// becomes the current field's value, and its page/start/end go to the hidden evidence:<path>
// input the server checks against the stored document text. The offsets count characters of
// the page's text: the view holds exactly that text (marks only wrap parts of it). An amount
// is typed the way the output holds it ("1234.50"), whatever the page prints ("1.234,50").
(function () {
  "use strict";
  const form = document.getElementById("review-form");
  if (!form) return;
  const rows = Array.from(form.querySelectorAll("tr.review-field"));
  const comment = document.getElementById("comment");
  let current = -1;

  function fieldOf(row) { return row.dataset.field; }
  function valueInput(row) { return row.querySelector("input.field-value"); }
  function byField(selector, field) {
    return Array.from(document.querySelectorAll(selector)).filter((el) => el.dataset.field === field);
  }

  function select(index, { scrollRow = true, scrollBox = true } = {}) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, index));
    document.querySelectorAll(".current").forEach((el) => el.classList.remove("current"));
    const row = rows[current];
    row.classList.add("current");
    if (scrollRow) row.scrollIntoView({ block: "nearest" });
    const marked = byField(".field-box", fieldOf(row)).concat(byField("mark.evidence", fieldOf(row)));
    marked.forEach((el) => el.classList.add("current"));
    if (scrollBox && marked.length) marked[0].scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  // The selected printed number as the output writes it, when the field's value is a decimal
  // number ("300.00"): separators dropped, the decimal separator being the one followed by as
  // many digits as the value has decimals. Anything else (an integer-looking invoice number
  // too) is taken as selected.
  function asOutputValue(printed, original) {
    const number = /^-?\d+\.(\d+)$/.exec(original || "");
    const digits = printed.replace(/[\s'\u2019]/g, "");
    if (!number || !/^-?\d[\d.,]*$/.test(digits)) return printed;
    const separator = Math.max(digits.lastIndexOf(","), digits.lastIndexOf("."));
    if (separator < 0 || digits.length - separator - 1 !== number[1].length) return printed;
    return digits.slice(0, separator).replace(/[.,]/g, "") + "." + digits.slice(separator + 1);
  }

  function markChanged(row) {
    const input = valueInput(row);
    row.classList.toggle("changed", input.value.trim() !== (input.dataset.original || "").trim());
  }

  function edit() {
    if (current < 0) select(0);
    const input = valueInput(rows[current]);
    input.focus();
    input.select();
  }

  function backToNavigation() {
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    if (current >= 0) markChanged(rows[current]);
  }

  function submitWith(buttonId) {
    const button = document.getElementById(buttonId);
    if (form.requestSubmit) form.requestSubmit(button); else button.click();
  }

  rows.forEach((row, index) => {
    row.addEventListener("click", () => select(index, { scrollRow: false }));
    const input = valueInput(row);
    input.addEventListener("focus", () => { if (current !== index) select(index, { scrollRow: false }); });
    // A typed value is no longer the selected text: the server looks it up in the document.
    input.addEventListener("input", () => {
      row.querySelector("input.field-evidence").value = "";
      row.classList.remove("evidenced", "accepted");
      markChanged(row);
    });
  });

  document.querySelectorAll(".field-box").forEach((box) => {
    box.addEventListener("click", () => {
      const index = rows.findIndex((row) => fieldOf(row) === box.dataset.field);
      if (index < 0) return;
      select(index, { scrollBox: false });
      rows[index].focus({ preventScroll: true });
    });
  });

  document.querySelectorAll(".document-page").forEach((view) => {
    view.addEventListener("mouseup", () => {
      const selection = window.getSelection();
      if (current < 0 || !selection || selection.isCollapsed || !view.contains(selection.anchorNode)) return;
      const range = selection.getRangeAt(0);
      const before = document.createRange();
      before.setStart(view, 0);
      before.setEnd(range.startContainer, range.startOffset);
      const raw = range.toString();
      const start = before.toString().length + (raw.length - raw.trimStart().length);
      const quote = raw.trim();
      if (!quote) return;
      const row = rows[current];
      valueInput(row).value = asOutputValue(quote, valueInput(row).dataset.original);
      row.querySelector("input.field-evidence").value = `${view.dataset.page}:${start}:${start + quote.length}`;
      row.classList.add("evidenced");
      markChanged(row);
    });
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    // A focused button or link keeps its own keys: Enter on "Approve" approves, not "edit".
    if (target instanceof HTMLButtonElement || target instanceof HTMLAnchorElement) return;
    const editing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement;
    if (editing) {
      const inField = target.classList.contains("field-value") || target.classList.contains("reason");
      if (event.key === "Escape" || (event.key === "Enter" && inField)) {
        event.preventDefault();
        backToNavigation();
      }
      return;
    }
    const key = event.key;
    let handled = true;
    if (key === "j" || key === "ArrowDown") select(current + 1);
    else if (key === "k" || key === "ArrowUp") select(current - 1);
    else if (key === "a") {
      if (current >= 0) rows[current].classList.add("accepted");
      select(current + 1);
    } else if (key === "c" || key === "Enter") edit();
    else if (key === "A" && event.shiftKey) submitWith("approve");
    else if (key === "R" && event.shiftKey) {
      if (comment && !comment.value.trim()) {
        comment.placeholder = "A rejection needs a comment: say why, then Shift+R again (after Esc).";
        comment.focus();
      } else submitWith("reject");
    } else if (key === "n" && form.dataset.nextUrl) window.location.assign(form.dataset.nextUrl);
    else handled = false;
    if (handled) event.preventDefault();
  });

  rows.forEach(markChanged);
})();
