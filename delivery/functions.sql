-- The delivery app's database functions as they are now: its states, statuses and outcomes as
-- constants the named statements call (delivery_state_pending() and so on), as the extraction
-- app's statements call job_state_ready(). IMMUTABLE SQL functions are inlined and folded to
-- constants while a statement is planned, so a state test still matches the partial indexes'
-- predicates (delivery_due_idx, delivery_endpoint_due_idx, delivery_sending_idx,
-- endpoint_tenant_live_idx), prepared or not. tests/config/test_sql_statements.py checks each
-- against its enum in delivery/models.py.
--
-- Migrations apply this file (config.sql.ApplyStatementFile), each statement a
-- CREATE OR REPLACE. To change one, edit it here and add a migration that applies the file
-- again with its new sha256 (tests/extraction/test_database_functions.py checks both apps).


-- name: delivery_state_pending
CREATE OR REPLACE FUNCTION delivery_state_pending() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'pending'::text $$


-- name: delivery_state_sending
CREATE OR REPLACE FUNCTION delivery_state_sending() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'sending'::text $$


-- name: delivery_state_delivered
CREATE OR REPLACE FUNCTION delivery_state_delivered() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'delivered'::text $$


-- name: delivery_state_failed
CREATE OR REPLACE FUNCTION delivery_state_failed() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'failed'::text $$


-- name: endpoint_status_pending_verification
CREATE OR REPLACE FUNCTION endpoint_status_pending_verification() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'pending_verification'::text $$


-- name: endpoint_status_active
CREATE OR REPLACE FUNCTION endpoint_status_active() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'active'::text $$


-- name: endpoint_status_flagged
CREATE OR REPLACE FUNCTION endpoint_status_flagged() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'flagged'::text $$


-- name: endpoint_status_disabled
CREATE OR REPLACE FUNCTION endpoint_status_disabled() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'disabled'::text $$


-- name: circuit_state_closed
CREATE OR REPLACE FUNCTION circuit_state_closed() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'closed'::text $$


-- name: circuit_state_open
CREATE OR REPLACE FUNCTION circuit_state_open() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'open'::text $$


-- name: circuit_state_half_open
CREATE OR REPLACE FUNCTION circuit_state_half_open() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'half_open'::text $$


-- name: delivery_attempt_in_flight
CREATE OR REPLACE FUNCTION delivery_attempt_in_flight() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'in_flight'::text $$


-- name: delivery_attempt_delivered
CREATE OR REPLACE FUNCTION delivery_attempt_delivered() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'delivered'::text $$


-- name: delivery_attempt_http_error
CREATE OR REPLACE FUNCTION delivery_attempt_http_error() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'http_error'::text $$


-- name: delivery_attempt_timeout
CREATE OR REPLACE FUNCTION delivery_attempt_timeout() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'timeout'::text $$


-- name: delivery_attempt_connection_error
CREATE OR REPLACE FUNCTION delivery_attempt_connection_error() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'connection_error'::text $$


-- name: delivery_attempt_egress_refused
CREATE OR REPLACE FUNCTION delivery_attempt_egress_refused() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'egress_refused'::text $$


-- name: delivery_attempt_unknown
CREATE OR REPLACE FUNCTION delivery_attempt_unknown() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'unknown'::text $$
