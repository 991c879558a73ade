//! `submit` journals a run without driving it (a later `runs resume` drives it), and `worker`
//! refuses the SQLite store, which hands no runs out. The Postgres path (workers claiming
//! submitted runs, killed and stopped) is the chaos test's (tests/chaos).

use crate::support::{
    a2aflow_guarded, agents, assert_exit, assert_fails_with, stderr, stdout, stdout_json,
};

fn workflow_file(dir: &std::path::Path) -> String {
    let wf = serde_json::json!({"id": "wf", "name": "submitted", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "task submitted"}]}
    ]});
    let path = dir.join("wf.json");
    std::fs::write(&path, wf.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn submit_journals_a_run_that_nobody_drives_until_a_resume_does() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path());
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow_guarded(&[
        "submit", &wf, "--agent", &agent, "--store", &store, "--format", "json",
    ]);
    assert_exit(&o, 0);
    let id = stdout_json(&o)["executionId"].as_str().unwrap().to_owned();
    assert!(a.server.requests().is_empty(), "submit sent nothing");
    let shown = a2aflow_guarded(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    assert_exit(&shown, 0);
    assert_eq!(stdout_json(&shown)["state"], "waiting");
    let resumed = a2aflow_guarded(&[
        "runs", "resume", &id, "--store", &store, "--agent", &agent, "--format", "json",
    ]);
    assert_exit(&resumed, 0);
    assert_eq!(
        stdout_json(&resumed)["success"],
        true,
        "{}",
        stdout(&resumed)
    );
    // Text output is the id alone.
    let o = a2aflow_guarded(&["submit", &wf, "--store", &store]);
    assert_exit(&o, 0);
    assert!(stdout(&o).trim().starts_with("run-"), "{}", stdout(&o));
}

#[test]
fn submit_refuses_what_only_a_driver_uses_and_agents_that_do_not_cover_the_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path());
    let store = dir.path().join("runs.db").display().to_string();
    let events = dir.path().join("e.jsonl").display().to_string();
    let o = a2aflow_guarded(&["submit", &wf, "--store", &store, "--events", &events]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--events"), "{}", stderr(&o));
    let o = a2aflow_guarded(&["submit", &wf, "--store", &store, "--ui"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--ui"), "{}", stderr(&o));
    let o = a2aflow_guarded(&["submit", &wf]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("needs --store"), "{}", stderr(&o));
    let o = a2aflow_guarded(&[
        "submit",
        &wf,
        "--store",
        &store,
        "--agent",
        "beta=http://127.0.0.1:1",
    ]);
    assert_fails_with(&o, 2, "workflow.unknown_agent");
    assert!(
        !dir.path().join("runs.db").exists() || {
            let listed = a2aflow_guarded(&["runs", "list", "--store", &store, "--format", "json"]);
            stdout_json(&listed).as_array().is_some_and(Vec::is_empty)
        }
    );
}

#[test]
fn a_worker_on_the_sqlite_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db").display().to_string();
    let o = a2aflow_guarded(&["worker", "--store", &store]);
    assert_fails_with(&o, 2, "store.unavailable");
    assert!(
        stderr(&o).contains("workers need the Postgres store"),
        "{}",
        stderr(&o)
    );
}

/// A schema of the test's own on the server `A2AFLOW_PG_URL` names (the password from
/// `PGPASSWORD`, inherited by the processes): its store URL, and the admin connection's
/// runtime and client to drop it.
struct Schema {
    url: String,
    name: String,
    rt: tokio::runtime::Runtime,
    admin: tokio_postgres::Client,
}

impl Schema {
    fn new(tag: &str) -> Schema {
        let server = std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
            panic!(
                "A2AFLOW_PG_URL is not set: this test needs a PostgreSQL server. Run `cargo \
                 xtask postgres start` and the two `export` lines it prints \
                 (docs/guide/postgres.md)"
            )
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut config: tokio_postgres::Config = server.parse().unwrap();
        if let Ok(p) = std::env::var("A2AFLOW_PG_PASSWORD").or_else(|_| std::env::var("PGPASSWORD"))
        {
            config.password(p);
        }
        let name = format!("cli_{tag}_{}", std::process::id());
        let admin = rt.block_on(async {
            let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!(
                    "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
                ))
                .await
                .unwrap();
            client
        });
        let sep = if server.contains('?') { '&' } else { '?' };
        Schema {
            url: format!("{server}{sep}options=-csearch_path%3D{name}"),
            name,
            rt,
            admin,
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        let _ = self.rt.block_on(self.admin.batch_execute(&sql));
    }
}

/// A worker process, its stderr in a file; SIGTERMed (and waited for) when dropped.
struct WorkerProcess {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl WorkerProcess {
    fn start(args: &[&str], log: std::path::PathBuf) -> WorkerProcess {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_a2aflow"))
            .arg("worker")
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        WorkerProcess { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM (kill(1): this workspace forbids unsafe code); the exit status.
    fn stop(&mut self) -> std::process::ExitStatus {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let guard = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if std::time::Instant::now() > guard {
                let _ = self.child.kill();
                panic!("the worker did not stop on SIGTERM: {}", self.log());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls `check` every 50 ms until it gives a value, for at most 60 s.
fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            std::time::Instant::now() < guard,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The messages the testkit's agents were sent (SendMessage and SendStreamingMessage).
fn sent_messages(server: &a2aflow_testkit::TestServer) -> Vec<serde_json::Value> {
    server
        .requests()
        .iter()
        .filter(|r| {
            matches!(
                r.route,
                Some(a2aflow_testkit::Route::Send | a2aflow_testkit::Route::Stream)
            )
        })
        .filter_map(|r| {
            let body = r.body.as_ref()?;
            body.get("params")
                .and_then(|p| p.get("message"))
                .or_else(|| body.get("message"))
                .cloned()
        })
        .collect()
}

/// A run parked at a gate under a worker does not hold it: the worker suspends the run (lease
/// given up, state `waiting`), `runs answer` from another process journals the answer, and a
/// worker claims the run again and drives it to its end; the agent got each message once.
#[test]
fn a_run_parked_under_a_worker_is_answered_from_another_process_and_finished_by_a_worker() {
    let a = agents();
    let schema = Schema::new("parked");
    let dir = tempfile::tempdir().unwrap();
    let wf = serde_json::json!({"id": "wf", "name": "gated", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "input which city"}],
         "next": [{"step": "after"}]},
        {"name": "after", "subtasks": [{"agent": "alpha", "description": "task after"}]}
    ]});
    let wf_path = dir.path().join("wf.json");
    std::fs::write(&wf_path, wf.to_string()).unwrap();
    let wf_path = wf_path.display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let store = schema.url.as_str();

    let mut worker = WorkerProcess::start(
        &["--store", store, "--agent", &agent, "--poll", "0.2"],
        dir.path().join("worker.log"),
    );
    let o = a2aflow_guarded(&[
        "submit", &wf_path, "--store", store, "--agent", &agent, "--gates", "park", "--format",
        "json",
    ]);
    assert_exit(&o, 0);
    let id = stdout_json(&o)["executionId"].as_str().unwrap().to_owned();

    // The worker parks the run and lets it go: the journal shows the gate, nobody drives it.
    let line = format!("run {id} parked");
    eventually("the worker to park the run", || {
        worker.log().contains(&line).then_some(())
    });
    let shown = a2aflow_guarded(&["runs", "show", &id, "--store", store, "--format", "json"]);
    assert_exit(&shown, 0);
    let view = stdout_json(&shown);
    assert_eq!(view["state"], "waiting", "{view:#}");
    let local = view["openGates"][0]["localTaskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(sent_messages(&a.server).len(), 1);

    let answered = a2aflow_guarded(&[
        "runs",
        "answer",
        &id,
        "--task",
        &local,
        "--text",
        "Paris",
        "--store",
        store,
        "--no-resume",
        "--format",
        "json",
    ]);
    assert_exit(&answered, 0);
    assert_eq!(stdout_json(&answered)["journaled"], true);

    let finished = format!("run {id} succeeded");
    eventually("a worker to finish the answered run", || {
        worker.log().contains(&finished).then_some(())
    });
    let shown = a2aflow_guarded(&["runs", "show", &id, "--store", store, "--format", "json"]);
    assert_eq!(stdout_json(&shown)["state"], "succeeded");
    let sent = sent_messages(&a.server);
    let texts: Vec<&str> = sent
        .iter()
        .map(|m| m["parts"][0]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        texts.len(),
        3,
        "the question, the answer, the next step: {texts:?}"
    );
    assert_eq!(
        texts.iter().filter(|t| **t == "Paris").count(),
        1,
        "{texts:?}"
    );
    assert_eq!(sent[1]["contextId"], sent[0]["contextId"]);
    assert!(worker.stop().success(), "{}", worker.log());
    let log = worker.log();
    assert!(log.contains("parked 1"), "{log}");
}
