//! TLS to the database through rustls: a server of the test's own (Debian's binaries, as
//! `cargo xtask postgres` finds them; run as the `postgres` user when the test runs as root),
//! started with `ssl=on` and a certificate signed by a CA the test makes. With that CA trusted
//! (`StoreOptions::extra_roots`) and `sslmode=require` the store opens over TLS (the server's
//! `pg_hba.conf` takes TLS connections only); with another CA the open fails `store.unavailable`, naming the
//! certificate, within its timeout.

use a2aflow_model::ErrorCode;
use a2aflow_store_postgres::{PostgresStore, StoreOptions};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls_pki_types::CertificateDer;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A CA: its certificate (DER and PEM) and what signs with it.
fn ca(name: &str) -> (CertificateDer<'static>, String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.der().clone(), cert.pem(), Issuer::new(params, key))
}

fn bindir() -> PathBuf {
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(dir) = from_pg_config.filter(|d| d.join("initdb").is_file()) {
        return dir;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server binaries (`cargo xtask postgres start` installs them)")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .expect("an initdb under /usr/lib/postgresql")
        .1
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A server with `ssl=on`, stopped when dropped.
struct TlsServer {
    bin: PathBuf,
    data: PathBuf,
    as_postgres: bool,
    port: u16,
    _dir: tempfile::TempDir,
}

impl TlsServer {
    fn run(&self, program: &str, args: &[&str]) {
        let program = self.bin.join(program);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let out = c.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{} {args:?}: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn start(issuer: &Issuer<'static, KeyPair>) -> TlsServer {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "a2aflow test database");
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, issuer).unwrap();
        let (cert_path, key_path) = (dir.path().join("server.crt"), dir.path().join("server.key"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        let as_postgres = as_root();
        let chown = |p: &Path| {
            if as_postgres {
                let ok = Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(p)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "chown {}", p.display());
            }
        };
        let mode = |p: &Path, m: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        };
        mode(dir.path(), 0o755);
        mode(&key_path, 0o600);
        chown(dir.path());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = TlsServer {
            bin: bindir(),
            data: data.clone(),
            as_postgres,
            port,
            _dir: dir,
        };
        let data_s = data.display().to_string();
        server.run(
            "initdb",
            &[
                "-D",
                &data_s,
                "-U",
                "a2aflow",
                "--auth=trust",
                "--no-instructions",
            ],
        );
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n\
             hostnossl all all 0.0.0.0/0 reject\n",
        )
        .unwrap();
        let options = format!(
            "-h 127.0.0.1 -p {port} -k {} -c fsync=off -c ssl=on -c ssl_cert_file={} -c \
             ssl_key_file={}",
            data.display(),
            cert_path.display(),
            key_path.display()
        );
        let log = data.join("server.log").display().to_string();
        server.run(
            "pg_ctl",
            &[
                "-D", &data_s, "-o", &options, "-l", &log, "-w", "-t", "60", "start",
            ],
        );
        server
    }

    fn url(&self) -> String {
        format!(
            "postgres://a2aflow@localhost:{}/postgres?sslmode=require",
            self.port
        )
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "stop"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_ssl_on_is_reached_over_tls_and_an_unknown_ca_is_refused() {
    let (ca_der, ca_pem, issuer) = ca("a2aflow test CA");
    let server = TlsServer::start(&issuer);
    let timeout = Duration::from_secs(10);
    let trusting = StoreOptions::default()
        .with_extra_roots(vec![ca_der])
        .with_connect_timeout(timeout);
    let store = PostgresStore::open_with(&server.url(), None, trusting)
        .await
        .expect("a verified TLS connection");
    let journaled = a2aflow_kernel::RunStore::list(&store, Default::default())
        .await
        .unwrap();
    assert!(journaled.is_empty());
    drop(store);
    // The server takes TLS connections only (pg_hba: hostssl, and hostnossl rejected): the
    // store above was on TLS, and one that does not ask for it is turned away.
    let plain = server.url().replace("sslmode=require", "sslmode=disable");
    let e = PostgresStore::open_with(&plain, None, StoreOptions::default())
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert!(e.message.contains("no encryption"), "{}", e.message);

    let (stranger, _, _) = ca("another CA");
    let distrusting = StoreOptions::default()
        .with_extra_roots(vec![stranger])
        .with_connect_timeout(timeout);
    let started = Instant::now();
    let e = PostgresStore::open_with(&server.url(), None, distrusting)
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert!(e.message.contains("certificate"), "{}", e.message);
    assert!(started.elapsed() < timeout + Duration::from_secs(20));

    // The CA as libpq names it, a PEM file in the URL's `sslrootcert` (percent-encoded in a
    // URL): trusted as the option's roots are.
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("private ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let encoded = ca_file.display().to_string().replace(' ', "%20");
    let with_file = format!("{}&sslrootcert={encoded}", server.url());
    let options = StoreOptions::default().with_connect_timeout(timeout);
    let store = PostgresStore::open_with(&with_file, None, options.clone())
        .await
        .expect("a TLS connection verified by the sslrootcert file");
    store.close();
    // A missing file and a file without a certificate are refused before connecting.
    for (file, why) in [
        (dir.path().join("absent.pem"), "cannot be read"),
        (dir.path().join("empty.pem"), "holds no PEM certificate"),
    ] {
        std::fs::write(dir.path().join("empty.pem"), "not a certificate\n").unwrap();
        let url = format!("{}&sslrootcert={}", server.url(), file.display());
        let e = PostgresStore::open_with(&url, None, options.clone())
            .await
            .unwrap_err();
        assert!(e.is(ErrorCode::ConfigInvalid), "{e}");
        assert!(e.message.contains(why), "{}", e.message);
    }
}
