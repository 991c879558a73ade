//! A throwaway PostgreSQL server for the Postgres run store's tests: Debian's server binaries
//! (installed with `apt-get` when missing), a cluster made by `initdb` under `target/`, owned by
//! the `postgres` user when this runs as root (the server refuses to run as root), listening on
//! 127.0.0.1 on a free port with its socket in its own directory, one role `a2aflow` with a
//! generated password (SCRAM).
//!
//! - CI: [`Server::start_for_ci`] makes a fresh cluster in `target/postgres-ci`; the returned
//!   guard stops it (`pg_ctl stop -m immediate`) when dropped, so a failed test step still stops
//!   it.
//! - Developers: `cargo xtask postgres start` makes (once) and starts `target/postgres-dev` and
//!   prints the `export` lines for `A2AFLOW_PG_URL` and `PGPASSWORD`; `cargo xtask postgres
//!   stop` stops it. See docs/guide/postgres.md.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The role the tests log in as.
const ROLE: &str = "a2aflow";
/// How long `pg_ctl start` may wait for the server to accept connections, in seconds.
const READY_SECS: &str = "60";

/// A running cluster; stops it when dropped.
pub struct Server {
    bindir: PathBuf,
    data: PathBuf,
    port: u16,
    password: String,
    as_postgres: bool,
    stop_on_drop: bool,
}

impl Server {
    /// A fresh cluster in `target/postgres-ci`, started, stopped when the guard drops.
    pub fn start_for_ci(root: &Path) -> Result<Server, String> {
        Server::start_fresh(root, "postgres-ci")
    }

    /// A fresh cluster in `target/NAME` (see [`Server::start_for_ci`]), started, stopped when
    /// the guard drops: `cargo xtask bench` runs its own in `target/postgres-bench`.
    pub fn start_fresh(root: &Path, name: &str) -> Result<Server, String> {
        let dir = ci_dir(root, name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("postgres: cannot remove {}: {e}", dir.display()))?;
        }
        let mut server = Server::make(&dir)?;
        server.start()?;
        server.stop_on_drop = true;
        Ok(server)
    }

    /// The URL the tests use (no password: it goes in `PGPASSWORD`).
    pub fn url(&self) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}/postgres", self.port)
    }

    /// The role's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// A new cluster in `dir` (made with `initdb`), or the one already there.
    fn make(dir: &Path) -> Result<Server, String> {
        let bindir = find_bindir()?;
        let as_postgres = running_as_root();
        let data = dir.join("data");
        let password_file = dir.join("password");
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("postgres: cannot create {}: {e}", dir.display()))?;
        if !data.join("PG_VERSION").exists() {
            let password = random_password()?;
            write_private(&password_file, &password)?;
            if as_postgres {
                chown_postgres(dir)?;
            }
            let initdb = bindir.join("initdb");
            let pwfile = password_file.display().to_string();
            let data_s = data.display().to_string();
            run(
                as_postgres,
                &initdb,
                &[
                    "-D",
                    &data_s,
                    "-U",
                    ROLE,
                    "--auth=scram-sha-256",
                    "--pwfile",
                    &pwfile,
                    "--encoding=UTF8",
                    "--no-instructions",
                ],
            )?;
        }
        let password = std::fs::read_to_string(&password_file)
            .map_err(|e| format!("postgres: cannot read {}: {e}", password_file.display()))?
            .trim()
            .to_owned();
        let port = std::fs::read_to_string(dir.join("port"))
            .ok()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(0);
        Ok(Server {
            bindir,
            data,
            port,
            password,
            as_postgres,
            stop_on_drop: false,
        })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let data = self.data.display().to_string();
        let mut all = vec!["-D", data.as_str()];
        all.extend_from_slice(args);
        run(self.as_postgres, &self.bindir.join("pg_ctl"), &all)
    }

    fn running(&self) -> bool {
        let data = self.data.display().to_string();
        command(
            self.as_postgres,
            &self.bindir.join("pg_ctl"),
            &["-D", &data, "status"],
        )
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
    }

    /// Starts the server on a free port (waiting until it accepts connections, bounded).
    fn start(&mut self) -> Result<(), String> {
        if self.running() && self.port != 0 {
            return Ok(());
        }
        self.port = free_port()?;
        let dir = self.data.parent().unwrap_or(&self.data).to_path_buf();
        std::fs::write(dir.join("port"), self.port.to_string())
            .map_err(|e| format!("postgres: cannot write the port file: {e}"))?;
        let options = format!(
            "-h 127.0.0.1 -p {} -k {} -c fsync=off",
            self.port,
            self.data.display()
        );
        let log = dir.join("server.log").display().to_string();
        if self.as_postgres {
            chown_postgres(&dir)?;
        }
        self.pg_ctl(&["-w", "-t", READY_SECS, "-l", &log, "-o", &options, "start"])
            .map_err(|e| format!("{e} (the server's log is {log})"))
    }

    /// Stops the server at once.
    fn stop(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "immediate", "stop"])
    }
}

/// `target/postgres-ci`, or, when the `postgres` user cannot reach into `target/` (a checkout
/// under a directory only root may enter), a directory of this process under the system's
/// temporary directory; the choice is printed.
fn ci_dir(root: &Path, name: &str) -> PathBuf {
    let target = root.join("target");
    if !running_as_root() || reachable_by_postgres(&target) {
        return target.join(name);
    }
    let dir = std::env::temp_dir().join(format!("a2aflow-{name}-{}", std::process::id()));
    eprintln!(
        "postgres: the postgres user cannot enter {}; the test cluster goes in {}",
        target.display(),
        dir.display()
    );
    dir
}

/// Whether the `postgres` user can enter `dir` (every directory above it included).
fn reachable_by_postgres(dir: &Path) -> bool {
    Command::new("runuser")
        .args(["-u", "postgres", "--", "test", "-x"])
        .arg(dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.stop_on_drop
            && let Err(e) = self.stop()
        {
            eprintln!("postgres: stopping the test server failed: {e}");
        }
    }
}

/// `cargo xtask postgres <start | stop>` for developers.
pub fn run_command(root: &Path, args: &[String]) -> Result<(), String> {
    let dir = root.join("target").join("postgres-dev");
    match args.first().map(String::as_str) {
        Some("start") => {
            let mut server = Server::make(&dir)?;
            server.start()?;
            println!("export A2AFLOW_PG_URL={}", server.url());
            println!("export PGPASSWORD={}", server.password());
            Ok(())
        }
        Some("stop") => {
            let server = Server::make(&dir)?;
            if server.running() {
                server.stop()?;
            }
            eprintln!("postgres: stopped ({})", dir.display());
            Ok(())
        }
        _ => Err("usage: cargo xtask postgres <start | stop>".to_owned()),
    }
}

/// Debian's server binaries: `pg_config --bindir`, else the newest `/usr/lib/postgresql/*/bin`,
/// installing the `postgresql` package when neither has `initdb`.
fn find_bindir() -> Result<PathBuf, String> {
    if let Some(dir) = locate_bindir() {
        return Ok(dir);
    }
    eprintln!("postgres: no server binaries found; installing Debian's postgresql package");
    let update = Command::new("apt-get")
        .arg("update")
        .stdout(std::io::stderr())
        .status();
    let install = Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends", "postgresql"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(std::io::stderr())
        .status();
    match (update, install) {
        (Ok(u), Ok(i)) if u.success() && i.success() => {}
        (u, i) => {
            return Err(format!(
                "postgres: installing the postgresql package failed (apt-get update: {u:?}, \
                 install: {i:?}); the Postgres store's tests need its server binaries"
            ));
        }
    }
    locate_bindir().ok_or_else(|| {
        "postgres: the postgresql package is installed but no initdb was found".to_owned()
    })
}

fn locate_bindir() -> Option<PathBuf> {
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(dir) = from_pg_config.filter(|d| d.join("initdb").is_file()) {
        return Some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `program args`, as the `postgres` user when `as_postgres`.
fn command(as_postgres: bool, program: &Path, args: &[&str]) -> Command {
    if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program).args(args);
        c
    } else {
        let mut c = Command::new(program);
        c.args(args);
        c
    }
}

/// Runs `program args` with its output on stderr (stdout carries only the `export` lines).
fn run(as_postgres: bool, program: &Path, args: &[&str]) -> Result<(), String> {
    let status = command(as_postgres, program, args)
        .stdout(std::io::stderr())
        .status()
        .map_err(|e| format!("postgres: could not start {}: {e}", program.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "postgres: `{} {}` failed: {status}",
            program.display(),
            args.join(" ")
        ))
    }
}

fn chown_postgres(dir: &Path) -> Result<(), String> {
    let status = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(dir)
        .status()
        .map_err(|e| format!("postgres: could not run chown: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "postgres: chown of {} to the postgres user failed (does the user exist?)",
            dir.display()
        ))
    }
}

/// A port nobody listens on now (the server binds it a moment later).
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("postgres: no free port on 127.0.0.1: {e}"))
}

/// 32 hex characters from the system's random source.
fn random_password() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("postgres: cannot read /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)))
        .map_err(|e| format!("postgres: cannot write {}: {e}", path.display()))
}
