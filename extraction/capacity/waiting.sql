-- "Why is my job waiting?" (extraction/capacity/waiting.py runs these).


-- name: database_now
-- Wait times are judged by the database's clock, as every transition is.
SELECT now()
