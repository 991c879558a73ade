//! The test server, and a scratch schema per store.

use a2aflow_store_postgres::{PostgresStore, StoreOptions};
use std::sync::Mutex;
use tokio_postgres::NoTls;

/// The server's URL from `A2AFLOW_PG_URL`; fails the test, saying how to get one, without it.
pub fn url() -> String {
    match std::env::var("A2AFLOW_PG_URL") {
        Ok(u) if !u.trim().is_empty() => u,
        _ => panic!(
            "A2AFLOW_PG_URL is not set: the Postgres store's tests need a PostgreSQL server. Run \
             `cargo xtask postgres start` and the two `export` lines it prints (see \
             docs/guide/postgres.md), then run the tests again"
        ),
    }
}

/// The test role's password (`A2AFLOW_PG_PASSWORD`, else `PGPASSWORD`).
pub fn password() -> Option<String> {
    ["A2AFLOW_PG_PASSWORD", "PGPASSWORD"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

/// `url` with the connection's search_path set to `schema`.
pub fn url_in_schema(schema: &str) -> String {
    let base = url();
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-csearch_path%3D{schema}")
}

/// An administrative connection to the test server.
pub async fn admin() -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url().parse().unwrap();
    if let Some(p) = password() {
        config.password(p);
    }
    let (client, connection) = config.connect(NoTls).await.unwrap_or_else(|e| {
        panic!("cannot reach the test server at A2AFLOW_PG_URL ({e}); is it running?")
    });
    tokio::spawn(connection);
    client
}

/// Schemas made for one test, dropped by [`Scratch::drop_all`].
pub struct Scratch {
    admin: tokio_postgres::Client,
    made: Mutex<Vec<String>>,
}

impl Scratch {
    /// A scratch area on the test server.
    pub async fn new() -> Self {
        Scratch {
            admin: admin().await,
            made: Mutex::new(Vec::new()),
        }
    }

    /// A new, empty schema's name.
    pub async fn schema(&self) -> String {
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        self.admin
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap();
        self.made.lock().unwrap().push(name.clone());
        name
    }

    /// Runs `sql` with `schema` as the search path.
    pub async fn exec_in(&self, schema: &str, sql: &str) {
        self.admin
            .batch_execute(&format!(
                "SET search_path = {schema}; {sql}; RESET search_path"
            ))
            .await
            .unwrap();
    }

    /// The rows of `sql` (one text column) with `schema` as the search path.
    pub async fn texts_in(&self, schema: &str, sql: &str) -> Vec<String> {
        self.admin
            .batch_execute(&format!("SET search_path = {schema}"))
            .await
            .unwrap();
        let rows = self.admin.query(sql, &[]).await.unwrap();
        self.admin.batch_execute("RESET search_path").await.unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    }

    /// A store in a new schema of its own.
    pub async fn store(&self, options: StoreOptions) -> PostgresStore {
        let schema = self.schema().await;
        open_in(&schema, options).await.unwrap()
    }

    /// Drops every schema this scratch made.
    pub async fn drop_all(self) {
        let made = std::mem::take(&mut *self.made.lock().unwrap());
        for name in made {
            self.admin
                .batch_execute(&format!("DROP SCHEMA {name} CASCADE"))
                .await
                .unwrap();
        }
    }
}

/// Opens the store in `schema` with the test password.
pub async fn open_in(
    schema: &str,
    options: StoreOptions,
) -> Result<PostgresStore, a2aflow_kernel::StoreError> {
    PostgresStore::open_with(&url_in_schema(schema), password().as_deref(), options).await
}
