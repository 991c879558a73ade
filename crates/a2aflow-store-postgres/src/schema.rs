//! The schema: a version table (`a2aflow_schema`: the application that owns the tables and the
//! schema version), the forward migrations, one step per version, and the check that runs them
//! when a store opens.
//!
//! Everything lives in the connection's current schema (the first of its `search_path`, `public`
//! unless the URL's `options` name another), so several stores can share one database, each in
//! a schema of its own. Opening takes a transaction-scoped advisory lock, so two hosts opening
//! the same store at once migrate it once.

use a2aflow_kernel::StoreError;
use a2aflow_model::ErrorCode;
use deadpool_postgres::Transaction;

/// The application name the version table records.
pub const APPLICATION: &str = "a2aflow";

/// The schema version this build writes and reads.
pub const CURRENT_VERSION: i32 = 2;

/// The tables a store holds besides the version table: a schema that has any of them but no
/// version table belongs to another application.
const TABLES: &[&str] = &["runs", "records", "leases", "events"];

/// Serialises the opening of stores across hosts (`pg_advisory_xact_lock`): "A2AF" in ASCII.
const OPEN_LOCK: i64 = 0x4132_4146;

/// The step that brings a store from version `n - 1` to `n` is `MIGRATIONS[n - 1]`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: runs, their journal records (JSON text kept as written), leases, events, the
    // database clock the leases are measured by, and the two write functions: an append batch
    // or an event batch is one statement (one round trip), its fence checked inside it.
    r#"
    CREATE TABLE runs (
        execution_id    text PRIMARY KEY,
        workflow_id     text NOT NULL,
        workflow_name   text NOT NULL,
        workflow_sha256 text NOT NULL,
        started_at_ms   bigint NOT NULL,
        final_state     text,
        finished_at_ms  bigint,
        next_seq        bigint NOT NULL
    );
    CREATE INDEX runs_newest ON runs (started_at_ms DESC, execution_id DESC);
    CREATE TABLE records (
        execution_id text NOT NULL REFERENCES runs ON DELETE CASCADE,
        seq          bigint NOT NULL,
        kind         text NOT NULL,
        body         json NOT NULL,
        PRIMARY KEY (execution_id, seq)
    );
    CREATE TABLE leases (
        execution_id  text PRIMARY KEY REFERENCES runs ON DELETE CASCADE,
        owner         text NOT NULL,
        token         bigint NOT NULL,
        expires_at_ms bigint NOT NULL
    );
    CREATE TABLE events (
        execution_id text NOT NULL REFERENCES runs ON DELETE CASCADE,
        seq          bigint NOT NULL,
        body         json NOT NULL,
        PRIMARY KEY (execution_id, seq)
    );
    CREATE FUNCTION a2aflow_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS $$
        SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    $$;
    CREATE FUNCTION a2aflow_append(
        p_id text, p_fenced boolean, p_owner text, p_token bigint,
        p_kinds text[], p_bodies text[], p_final_state text
    ) RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
        v_next  bigint;
        v_final text;
        v_n     bigint := coalesce(array_length(p_kinds, 1), 0);
    BEGIN
        SELECT next_seq, final_state INTO v_next, v_final
            FROM runs WHERE execution_id = p_id FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown execution' USING ERRCODE = 'A2F01';
        END IF;
        IF p_fenced AND NOT EXISTS (SELECT 1 FROM leases
                WHERE execution_id = p_id AND owner = p_owner AND token = p_token) THEN
            RAISE EXCEPTION 'lease lost' USING ERRCODE = 'A2F02';
        END IF;
        IF v_n = 0 THEN
            RETURN v_next;
        END IF;
        IF v_final IS NOT NULL THEN
            RAISE EXCEPTION 'run finished' USING ERRCODE = 'A2F03';
        END IF;
        INSERT INTO records (execution_id, seq, kind, body)
            SELECT p_id, v_next + t.o - 1, t.k, t.b::json
            FROM unnest(p_kinds, p_bodies) WITH ORDINALITY AS t(k, b, o);
        UPDATE runs SET next_seq = v_next + v_n,
                final_state = coalesce(p_final_state, final_state),
                finished_at_ms = CASE WHEN p_final_state IS NULL THEN finished_at_ms
                                      ELSE a2aflow_now_ms() END
            WHERE execution_id = p_id;
        RETURN v_next;
    END $$;
    CREATE FUNCTION a2aflow_record_events(
        p_id text, p_fenced boolean, p_owner text, p_token bigint,
        p_seqs bigint[], p_bodies text[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        v_last bigint;
        v_prev bigint;
        v_seq  bigint;
    BEGIN
        PERFORM 1 FROM runs WHERE execution_id = p_id FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown execution' USING ERRCODE = 'A2F01';
        END IF;
        IF p_fenced AND NOT EXISTS (SELECT 1 FROM leases
                WHERE execution_id = p_id AND owner = p_owner AND token = p_token) THEN
            RAISE EXCEPTION 'lease lost' USING ERRCODE = 'A2F02';
        END IF;
        SELECT max(seq) INTO v_last FROM events WHERE execution_id = p_id;
        v_prev := v_last;
        FOREACH v_seq IN ARRAY coalesce(p_seqs, '{}'::bigint[]) LOOP
            IF v_prev IS NOT NULL AND v_seq <= v_prev THEN
                RAISE EXCEPTION 'event order' USING ERRCODE = 'A2F04',
                    DETAIL = coalesce(v_last::text, '');
            END IF;
            v_prev := v_seq;
        END LOOP;
        INSERT INTO events (execution_id, seq, body)
            SELECT p_id, t.s, t.b::json FROM unnest(p_seqs, p_bodies) AS t(s, b);
    END $$;
    "#,
    // 1 -> 2: a run suspended at its gates is marked parked (the records its driver saw, its
    // deadline), and claims pass it over until something is appended after them or the
    // deadline passed.
    r#"
    ALTER TABLE runs ADD COLUMN parked_seq bigint, ADD COLUMN parked_until_ms bigint;
    "#,
];

/// What the current schema holds, as the open found it.
enum Found {
    /// Nothing of ours and nothing in our way: a new store.
    Empty,
    /// An a2aflow store at this version.
    Store(i32),
}

/// A `store.*` error about the schema `schema` of the store `target`.
fn schema_error(code: ErrorCode, target: &str, schema: &str, message: String) -> StoreError {
    StoreError::new(code, message)
        .with_detail("database", target)
        .with_detail("schema", schema)
}

/// Checks the current schema and brings it to [`CURRENT_VERSION`], in one transaction; an
/// empty schema gets a new store only when `create`.
pub(crate) async fn prepare(
    client: &mut deadpool_postgres::Client,
    target: &str,
    create: bool,
) -> Result<(), StoreError> {
    let fail =
        |e: tokio_postgres::Error| crate::error::postgres(target, "preparing the schema", &e);
    let tx = client.transaction().await.map_err(fail)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&OPEN_LOCK])
        .await
        .map_err(fail)?;
    let schema: Option<String> = tx
        .query_one("SELECT current_schema()", &[])
        .await
        .map_err(fail)?
        .get(0);
    let Some(schema) = schema else {
        return Err(StoreError::new(
            ErrorCode::StoreUnavailable,
            format!(
                "run store {target}: the connection's search_path names no schema that exists; \
                 create the schema first or correct the URL's options"
            ),
        )
        .with_detail("database", target));
    };
    let (from, fresh) = match inspect(&tx, target, &schema).await? {
        Found::Empty if !create => {
            return Err(schema_error(
                ErrorCode::StoreUnavailable,
                target,
                &schema,
                format!(
                    "there is no run store in schema '{schema}' of {target} (nothing was \
                     created); name the database and schema the runs were journaled in"
                ),
            ));
        }
        Found::Empty => (0, true),
        Found::Store(v) => (v, false),
    };
    for (at, step) in MIGRATIONS.iter().enumerate().skip(usize_of(from)) {
        tracing::info!(to = at + 1, schema = %schema, "migrating the Postgres run store schema");
        tx.batch_execute(step).await.map_err(fail)?;
    }
    if fresh {
        tx.execute(
            "CREATE TABLE a2aflow_schema (application text NOT NULL, version integer NOT NULL)",
            &[],
        )
        .await
        .map_err(fail)?;
        tx.execute(
            "INSERT INTO a2aflow_schema (application, version) VALUES ($1, $2)",
            &[&APPLICATION, &CURRENT_VERSION],
        )
        .await
        .map_err(fail)?;
    } else if from < CURRENT_VERSION {
        tx.execute(
            "UPDATE a2aflow_schema SET version = $1",
            &[&CURRENT_VERSION],
        )
        .await
        .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)
}

fn usize_of(n: i32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// What the schema holds: refuses another application's tables (`store.not_a_store`) and a
/// newer schema (`store.newer_schema`), changing nothing.
async fn inspect(tx: &Transaction<'_>, target: &str, schema: &str) -> Result<Found, StoreError> {
    let fail = |e: tokio_postgres::Error| crate::error::postgres(target, "reading the schema", &e);
    let present: Vec<String> = tx
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = ANY($1) ORDER BY 1",
            &[&[&["a2aflow_schema"][..], TABLES].concat()],
        )
        .await
        .map_err(fail)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !present.iter().any(|t| t == "a2aflow_schema") {
        if present.is_empty() {
            return Ok(Found::Empty);
        }
        return Err(schema_error(
            ErrorCode::StoreNotAStore,
            target,
            schema,
            format!(
                "run store {target}: schema '{schema}' holds tables that are not an a2aflow \
                 store ({}) and no a2aflow version table; it is left unchanged. Give the store a \
                 database or schema of its own (the URL's options=-csearch_path=NAME)",
                present.join(", ")
            ),
        ));
    }
    let rows = tx
        .query("SELECT application, version FROM a2aflow_schema", &[])
        .await
        .map_err(fail)?;
    let found: Option<(String, i32)> = match rows.as_slice() {
        [row] => Some((row.try_get(0).map_err(fail)?, row.try_get(1).map_err(fail)?)),
        _ => None,
    };
    match found {
        Some((app, version)) if app == APPLICATION => {
            if version > CURRENT_VERSION {
                Err(schema_error(
                    ErrorCode::StoreNewerSchema,
                    target,
                    schema,
                    format!(
                        "run store {target}: schema '{schema}' was written by a newer a2aflow \
                         (schema version {version}; this build knows up to {CURRENT_VERSION}); \
                         it is left unchanged, use a newer a2aflow"
                    ),
                )
                .with_detail("version", version)
                .with_detail("supported", CURRENT_VERSION))
            } else {
                Ok(Found::Store(version))
            }
        }
        _ => Err(schema_error(
            ErrorCode::StoreNotAStore,
            target,
            schema,
            format!(
                "run store {target}: the version table of schema '{schema}' does not name an \
                 a2aflow store; it is left unchanged"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_one_step_per_version() {
        assert_eq!(MIGRATIONS.len(), usize_of(CURRENT_VERSION));
    }
}
