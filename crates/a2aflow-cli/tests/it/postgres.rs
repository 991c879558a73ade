//! `--store postgres://…`: `run`, `runs show|list` and `runs resume` on the Postgres store the
//! test server `A2AFLOW_PG_URL` names (the password from `PGPASSWORD`, inherited), in its
//! default schema; a URL with a password in it is refused without showing it. Without the URL
//! the tests fail and say how to get a server.

use crate::support::{agents, assert_exit, assert_fails_with, stderr, stdout, wait_guarded};
use serde_json::Value;
use std::process::{Command, Output, Stdio};

fn a2aflow(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_guarded(child)
}

fn server_url() -> String {
    std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
        panic!(
            "A2AFLOW_PG_URL is not set: this test needs a PostgreSQL server. Run `cargo xtask \
             postgres start` and the two `export` lines it prints (docs/guide/postgres.md)"
        )
    })
}

#[test]
fn run_runs_and_resume_take_a_postgres_store() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = serde_json::json!({"id": "wf", "name": "shared", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "task pg"}]}
    ]});
    let wf_path = dir.path().join("wf.json");
    std::fs::write(&wf_path, wf.to_string()).unwrap();
    let wf_path = wf_path.display().to_string();
    let store = server_url();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow(&[
        "run", &wf_path, "--agent", &agent, "--store", &store, "--format", "json",
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let (first, rest) = out.split_once('\n').expect("the id line, then the result");
    let id = serde_json::from_str::<Value>(first).unwrap()["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let result: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(result["success"], true, "{out}");

    let shown = a2aflow(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    assert_exit(&shown, 0);
    let view: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(view["state"], "succeeded");
    let listed = a2aflow(&["runs", "list", "--store", &store, "--format", "json"]);
    assert_exit(&listed, 0);
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    let resumed = a2aflow(&[
        "runs", "resume", &id, "--store", &store, "--agent", &agent, "--format", "json",
    ]);
    assert_exit(&resumed, 0);
    assert_eq!(
        serde_json::from_slice::<Value>(&resumed.stdout).unwrap(),
        result
    );
}

#[test]
fn a_postgres_url_with_a_password_is_a_usage_error_that_does_not_show_it() {
    let o = a2aflow(&[
        "runs",
        "list",
        "--store",
        "postgres://app:pw-4b1d9e@127.0.0.1:1/runs",
    ]);
    assert_fails_with(&o, 2, "config.invalid");
    assert!(stderr(&o).contains("A2AFLOW_PG_PASSWORD"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("pw-4b1d9e") && !stdout(&o).contains("pw-4b1d9e"));
}

/// `a2aflow` with `args`, its environment without the Postgres password variables and with
/// `extra`.
fn a2aflow_env(args: &[&str], extra: &[(&str, &str)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .env_remove("PGPASSWORD")
        .env_remove("A2AFLOW_PG_PASSWORD")
        .envs(extra.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_guarded(child)
}

/// The database password from the credentials file (`a2aflow-store` / `postgres`, its value
/// from the environment as `env:NAME`): the run journals in the store, and the password is in
/// no output even at the most verbose level; an entry for another role, or a password set both
/// there and in the environment, is `config.invalid_credentials`, never shown either.
#[test]
fn the_store_password_comes_from_the_credentials_file_and_never_reaches_a_log() {
    let password = std::env::var("A2AFLOW_PG_PASSWORD")
        .or_else(|_| std::env::var("PGPASSWORD"))
        .expect("the test server's password (PGPASSWORD, as `cargo xtask postgres start` prints)");
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = serde_json::json!({"id": "wf", "name": "creds", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "task pg creds"}]}
    ]});
    let wf_path = dir.path().join("wf.json");
    std::fs::write(&wf_path, wf.to_string()).unwrap();
    let wf_path = wf_path.display().to_string();
    let store = server_url();
    let role = store
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('@').next())
        .unwrap()
        .to_owned();
    let creds = |user: &str| {
        let path = dir.path().join(format!("creds-{user}.json"));
        let doc = serde_json::json!({"a2aflow-store": {"postgres": {
            "username": user, "password": "env:FLEET_DB_SECRET"}}});
        std::fs::write(&path, doc.to_string()).unwrap();
        path.display().to_string()
    };
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let secret = [("FLEET_DB_SECRET", password.as_str())];
    let right = creds(&role);
    let o = a2aflow_env(
        &[
            "-vvv",
            "run",
            &wf_path,
            "--agent",
            &agent,
            "--store",
            &store,
            "--credentials",
            &right,
            "--format",
            "json",
        ],
        &secret,
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert_exit(&o, 0);
    assert!(
        out.contains("\"success\":true") || out.contains("\"success\": true"),
        "{out}"
    );
    assert!(
        !out.contains(&password) && !err.contains(&password),
        "the password leaked"
    );
    assert!(err.len() > 1000, "-vvv logged: {} bytes", err.len());

    let id = serde_json::from_str::<Value>(out.lines().next().unwrap()).unwrap()["executionId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Without the file and without the environment: the server refuses the login.
    let o = a2aflow_env(&["runs", "list", "--store", &store], &[]);
    assert_fails_with(&o, 2, "store.unavailable");
    // The commands that read the store take the same file.
    for args in [
        vec!["runs", "list", "--format", "json"],
        vec!["runs", "show", &id, "--format", "json"],
        vec!["runs", "events", &id],
    ] {
        let mut args: Vec<&str> = [vec!["-vvv"], args].concat();
        args.extend(["--store", &store, "--credentials", &right]);
        let o = a2aflow_env(&args, &secret);
        assert_exit(&o, 0);
        assert!(stdout(&o).contains(&id), "{args:?}: {}", stdout(&o));
        assert!(
            !stdout(&o).contains(&password) && !stderr(&o).contains(&password),
            "{args:?}: the password leaked"
        );
    }
    ui_opens_with(&store, &right, &secret, &password);

    let wrong = creds("someone_else");
    let o = a2aflow_env(
        &[
            "run",
            &wf_path,
            "--agent",
            &agent,
            "--store",
            &store,
            "--credentials",
            &wrong,
        ],
        &secret,
    );
    assert_fails_with(&o, 2, "config.invalid_credentials");
    assert!(stderr(&o).contains("role"), "{}", stderr(&o));
    assert!(!stderr(&o).contains(&password));

    let both = [
        ("FLEET_DB_SECRET", password.as_str()),
        ("PGPASSWORD", password.as_str()),
    ];
    let o = a2aflow_env(
        &[
            "run",
            &wf_path,
            "--agent",
            &agent,
            "--store",
            &store,
            "--credentials",
            &right,
        ],
        &both,
    );
    assert_fails_with(&o, 2, "config.invalid_credentials");
    assert!(stderr(&o).contains("PGPASSWORD"), "{}", stderr(&o));
    assert!(!stderr(&o).contains(&password));
    assert!(
        a.server.requests().len() >= 2,
        "the first run reached its agent"
    );
}

/// `a2aflow -vvv ui --store URL --credentials FILE` opens the store with the file's password
/// (it prints the page's URL only once the store is open) and logs no password.
fn ui_opens_with(store: &str, credentials: &str, env: &[(&str, &str)], password: &str) {
    use std::io::BufRead as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(["-vvv", "ui", "--store", store, "--credentials", credentials])
        .env_remove("PGPASSWORD")
        .env_remove("A2AFLOW_PG_PASSWORD")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let stopped = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let o = wait_guarded(child);
    assert!(
        line.starts_with("a2aflow ui: open http://127.0.0.1:"),
        "{line} / {}",
        stderr(&o)
    );
    assert_exit(&o, 0);
    assert!(!line.contains(password) && !stderr(&o).contains(password));
}
