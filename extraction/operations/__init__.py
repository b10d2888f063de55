"""Operating the service: the SLO report (OPS-4, ``slo.py``) and the self-audit (OPS-6,
``audit.py``). Delivery adds its parts through settings (SLO_REPORT_SECTIONS, AUDIT_CHECKS)."""
