//! Databases the store cannot use: each a typed `store.*` error within its timeout, nothing
//! changed, and no password in an error or a log line.

use crate::support::{Scratch, open_in, password, url};
use a2aflow_kernel::StoreError;
use a2aflow_model::ErrorCode;
use a2aflow_store_postgres::{CURRENT_VERSION, PostgresStore, StoreOptions};
use std::future::Future;
use std::time::Duration;

/// A hang guard well past every timeout these tests set.
const GUARD: Duration = Duration::from_secs(60);

async fn guarded<T>(work: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, work)
        .await
        .expect("the store did not answer within the hang guard")
}

fn quick() -> StoreOptions {
    StoreOptions::default().with_connect_timeout(Duration::from_secs(2))
}

/// The test URL pointed at `127.0.0.1:port`, keeping its role and database.
fn url_at_port(port: u16) -> String {
    let config: tokio_postgres::Config = url().parse().unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or(user);
    format!("postgres://{user}@127.0.0.1:{port}/{db}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_nobody_listens_for_is_unavailable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = guarded(PostgresStore::open_with(&url_at_port(port), None, quick()))
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert!(e.message.contains(&format!("127.0.0.1:{port}")), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_unavailable_after_the_connect_timeout() {
    // Accepts connections and never says a word: the handshake waits on it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let e = guarded(PostgresStore::open_with(&url_at_port(port), None, quick()))
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert!(e.message.contains("connect timeout"), "{e}");
    silent.abort();
}

/// Everything the tracing subscriber wrote while `work` ran.
async fn logged<T>(work: impl Future<Output = T>) -> (T, String) {
    use std::sync::{Arc, Mutex};
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let sink = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let out = work.await;
    let text = String::from_utf8_lossy(&buffer.0.lock().unwrap()).into_owned();
    (out, text)
}

#[tokio::test(flavor = "current_thread")]
async fn a_wrong_password_is_refused_and_never_shown() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    let wrong = "not-the-password-7f3a9c";
    let url = crate::support::url_in_schema(&schema);
    let (result, log): (Result<PostgresStore, StoreError>, String) = logged(guarded(
        PostgresStore::open_with(&url, Some(wrong), quick()),
    ))
    .await;
    let e = result.expect_err(
        "a wrong password was accepted: the test server must check passwords (the one `cargo \
         xtask postgres start` makes uses scram-sha-256)",
    );
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert_eq!(e.details["sqlstate"], "28P01", "{e}");
    assert!(e.message.contains("refused the login"), "{e}");
    for text in [e.to_string(), format!("{e:?}"), log] {
        assert!(!text.contains(wrong), "the password leaked: {text}");
    }
    if let Some(right) = password() {
        let store = open_in(&schema, quick()).await.unwrap();
        assert!(!format!("{store:?}").contains(&right));
    }
    scratch.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_applications_tables_are_not_a_store_and_stay_unchanged() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    scratch
        .exec_in(
            &schema,
            "CREATE TABLE runs (id integer PRIMARY KEY, note text)",
        )
        .await;
    let e = guarded(open_in(&schema, quick())).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreNotAStore), "{e}");
    assert!(e.message.contains("runs"), "{e}");
    let tables = scratch
        .texts_in(
            &schema,
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() ORDER BY 1",
        )
        .await;
    assert_eq!(tables, ["runs"], "nothing was created");
    scratch.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_and_left_as_it_is() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    drop(open_in(&schema, quick()).await.unwrap());
    let newer = CURRENT_VERSION + 1;
    scratch
        .exec_in(
            &schema,
            &format!("UPDATE a2aflow_schema SET version = {newer}"),
        )
        .await;
    let e = guarded(open_in(&schema, quick())).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreNewerSchema), "{e}");
    assert_eq!(e.details["version"], newer);
    let version = scratch
        .texts_in(&schema, "SELECT version::text FROM a2aflow_schema")
        .await;
    assert_eq!(version, [newer.to_string()]);
    scratch.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_opened_again_keeps_its_runs() {
    use a2aflow_kernel::RunStore;
    use a2aflow_kernel::journal::samples::started;
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    let first = open_in(&schema, quick()).await.unwrap();
    first.create_run(started("kept", 7)).await.unwrap();
    first.close();
    let again = open_in(&schema, quick()).await.unwrap();
    assert_eq!(again.load("kept").await.unwrap().entries.len(), 1);
    scratch.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_an_existing_store_in_an_empty_schema_creates_nothing() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    let url = crate::support::url_in_schema(&schema);
    let e = guarded(PostgresStore::open_existing_with(
        &url,
        password().as_deref(),
        quick(),
    ))
    .await
    .unwrap_err();
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert!(e.message.contains("nothing was created"), "{e}");
    let tables = scratch
        .texts_in(
            &schema,
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema()",
        )
        .await;
    assert!(tables.is_empty(), "{tables:?}");
    scratch.drop_all().await;
}

/// A store written by the version-1 schema (no parked columns) is migrated forward on open:
/// version 2, its runs kept, and a suspended run's release works on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_store_is_migrated_forward_keeping_its_runs() {
    use a2aflow_kernel::RunStore;
    use a2aflow_kernel::journal::samples::started;
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    let first = open_in(&schema, quick()).await.unwrap();
    first.create_run(started("old", 7)).await.unwrap();
    first.close();
    scratch
        .exec_in(
            &schema,
            "ALTER TABLE runs DROP COLUMN parked_seq, DROP COLUMN parked_until_ms; \
             UPDATE a2aflow_schema SET version = 1",
        )
        .await;
    let again = guarded(open_in(&schema, quick())).await.unwrap();
    let version = scratch
        .texts_in(&schema, "SELECT version::text FROM a2aflow_schema")
        .await;
    assert_eq!(version, [CURRENT_VERSION.to_string()]);
    assert_eq!(again.load("old").await.unwrap().entries.len(), 1);
    let lease = again.acquire("old", "host-a").await.unwrap();
    again.release_suspended(lease, 1).await.unwrap();
    let parked = scratch
        .texts_in(&schema, "SELECT parked_seq::text FROM runs")
        .await;
    assert_eq!(parked, ["1"]);
    scratch.drop_all().await;
}
