//! TLS on every listener of the coordination service, and clients that verify the server
//! (issue 31, items 1 and 2), on real processes over real TCP:
//!
//! - one `ringleader cluster --service --tls` (a throwaway CA, `--client-cert-auth`, mutual TLS
//!   between peers) shared by the checks of [`a_tls_cluster_serves_verified_clients_only`]:
//!   Debian's etcdctl and the `etcd-client` crate with their TLS options, `ringleader lock`,
//!   a plain-TCP client refused, a client without the CA or with another CA refusing the
//!   server, and the fake-server story (a stopped member's port taken by a process whose
//!   certificate the cluster CA did not sign: refused, and never sent the bearer token);
//! - [`peers_with_another_ca_refuse_each_other`]: three `serve` processes, one of them with a
//!   certificate of another CA, kept out by the other two.
//!
//! Each refusal has its counterpart that succeeds (the same client with the right files, the
//! fake server trusted on purpose), so a check that TLS verification were off would fail.
//! Every wait is for an event, bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{FORK, free_base, until};

/// This module's lane of loopback ports ([`free_base`]).
const LANE: u16 = 60;

/// The longest a cluster may take to serve its first request.
const START: Duration = Duration::from_secs(40);

/// The longest any one step may take.
const BOUND: Duration = Duration::from_secs(20);

fn ringleader() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ringleader"))
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A CA made in the test: its certificate file and the issuer that signs with its key.
struct TestCa {
    pem: PathBuf,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    fn new(dir: &Path, name: &str) -> TestCa {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name.push(rcgen::DnType::CommonName, name);
        p.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        let cert = p.self_signed(&key).unwrap();
        let pem = dir.join(format!("{name}.pem"));
        std::fs::write(&pem, cert.pem()).unwrap();
        TestCa { pem, issuer: rcgen::Issuer::new(p, key) }
    }

    /// A certificate for `127.0.0.1` (server and client use): its file and its key file.
    fn leaf(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()]).unwrap();
        p.distinguished_name.push(rcgen::DnType::CommonName, name);
        p.extended_key_usages =
            vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth, rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        let (c, k) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}-key.pem")));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }
}

/// A TLS server that is not a member: it completes handshakes with its own certificate and
/// records every byte a client sends it once a session is up (a request, its bearer token),
/// answering any request with a lease grant, as a fake API would.
struct FakeServer {
    connections: Arc<Mutex<usize>>,
    received: Arc<Mutex<Vec<u8>>>,
}

impl FakeServer {
    fn start(port: u16, cert: &Path, key: &Path) -> FakeServer {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(cert).unwrap().collect::<Result<_, _>>().unwrap();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap();
        let config = Arc::new(config);
        let listener = until(BOUND, "the stopped node's port to be free", || {
            TcpListener::bind(("127.0.0.1", port)).ok()
        });
        let fake = FakeServer { connections: Default::default(), received: Default::default() };
        let (connections, received) = (fake.connections.clone(), fake.received.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                *connections.lock().unwrap() += 1;
                let (config, received) = (config.clone(), received.clone());
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    let conn = rustls::ServerConnection::new(config).unwrap();
                    let mut tls = rustls::StreamOwned::new(conn, stream);
                    let mut buf = [0u8; 4096];
                    let mut seen = Vec::new();
                    while let Ok(n) = tls.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        received.lock().unwrap().extend_from_slice(&buf[..n]);
                        seen.extend_from_slice(&buf[..n]);
                        if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                            let body = r#"{"lease":9000000000,"ttl_ms":10000,"fencing":9000000000}"#;
                            let answer = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                                body.len()
                            );
                            let _ = tls.write_all(answer.as_bytes());
                            seen.clear();
                        }
                    }
                });
            }
        });
        fake
    }

    fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }
}

/// `ringleader cluster --service --tls`, three nodes with the gRPC API.
struct TlsCluster {
    child: Child,
    dir: PathBuf,
    api: u16,
    grpc: u16,
    /// What the launcher printed up to its client flags.
    printed: String,
}

impl TlsCluster {
    fn start() -> TlsCluster {
        let n = 3u16;
        let (api, peer, grpc) = (free_base(n, LANE), free_base(n, LANE), free_base(n, LANE));
        let dir = std::env::temp_dir().join(format!("ringleader-tls-{}-{api}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = ringleader();
        cmd.args(["cluster", "--service", "--tls", "--nodes", &n.to_string()])
            .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
            .args(["--grpc-base-port", &grpc.to_string()])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--secret-file")
            .arg(dir.join("cluster.secret"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            cmd.spawn().expect("the ringleader binary starts")
        };
        // The launcher's lines, read to the end on a thread of their own (a full pipe would
        // stall it), handed over until the client flags are printed.
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut printed = String::new();
        let t0 = Instant::now();
        loop {
            let line = rx
                .recv_timeout(BOUND.saturating_sub(t0.elapsed()))
                .expect("the launcher printed no client flags");
            printed.push_str(&line);
            printed.push('\n');
            if line.contains("client flags:") {
                break;
            }
        }
        let c = TlsCluster { child, dir, api, grpc, printed };
        let t0 = Instant::now();
        loop {
            let out = c.client(&["lease", "grant", "--ttl", "5s"], &c.endpoint(1)).output().unwrap();
            if out.status.success() {
                break;
            }
            assert!(
                t0.elapsed() < START,
                "the TLS cluster granted no lease within {START:?}: {}",
                text(&out)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }

    fn tls(&self, file: &str) -> PathBuf {
        self.dir.join("data").join("tls").join(file)
    }

    fn endpoint(&self, id: u16) -> String {
        format!("https://127.0.0.1:{}", self.api + id)
    }

    /// `ringleader VERB --endpoints ENDPOINTS` with the cluster's client files, then the rest
    /// of `args` (a `--` and a command among them).
    fn client(&self, args: &[&str], endpoints: &str) -> Command {
        let mut cmd = ringleader();
        cmd.arg(args[0]).args(["--endpoints", endpoints]);
        cmd.arg("--cacert").arg(self.tls("ca.pem"));
        cmd.arg("--cert").arg(self.tls("client.pem")).arg("--key").arg(self.tls("client-key.pem"));
        cmd.args(&args[1..]);
        cmd
    }

    fn etcdctl(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("etcdctl");
        cmd.env("ETCDCTL_API", "3")
            .arg(format!("--endpoints=https://127.0.0.1:{}", self.grpc + 1))
            .arg("--command-timeout=5s")
            .args(args)
            .stdin(Stdio::null());
        let mut child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect(
                "etcdctl is not installed: install Debian's package `etcd-client` (apt-get install etcd-client)",
            )
        };
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > BOUND {
                let _ = child.kill();
                panic!("etcdctl {args:?}: no exit within {BOUND:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait_with_output().unwrap()
    }

    fn ctl(&self, action: &str, id: u16) {
        let out = ringleader()
            .args(["cluster", "ctl", action, &id.to_string(), "--ctl", &format!("127.0.0.1:{}", self.api)])
            .arg("--secret-file")
            .arg(self.dir.join("cluster.secret"))
            .output()
            .unwrap();
        assert!(out.status.success(), "ctl {action} {id}: {}", text(&out));
    }
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a plain-TCP HTTP request to `port` gets back first (empty: nothing, the connection was
/// closed).
fn plain_http_answer(port: u16) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(BOUND)).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    answer
}

#[test]
fn a_tls_cluster_serves_verified_clients_only() {
    let c = TlsCluster::start();
    let ca = c.tls("ca.pem");
    let (cert, key) = (c.tls("client.pem"), c.tls("client-key.pem"));
    // The launcher prints the client's flags; the keys are the user's alone.
    assert!(
        c.printed.contains(&format!(
            "--cacert {} --cert {} --key {}",
            ca.display(),
            cert.display(),
            key.display()
        )),
        "{}",
        c.printed
    );
    assert!(c.printed.contains(&c.endpoint(1)), "https endpoints: {}", c.printed);
    for k in [key.clone(), c.tls("node-1-key.pem")] {
        assert_eq!(std::fs::metadata(&k).unwrap().permissions().mode() & 0o777, 0o600, "{}", k.display());
    }
    let work = c.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let other = TestCa::new(&work, "other-ca");

    // etcdctl with --cacert --cert --key: served.
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let flags =
        [format!("--cacert={}", s(&ca)), format!("--cert={}", s(&cert)), format!("--key={}", s(&key))];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        c.etcdctl(&args)
    };
    let out = with(&["put", "tls-key", "tls-value"]);
    assert!(out.status.success(), "etcdctl put over TLS: {}", text(&out));
    let out = with(&["get", "tls-key", "--print-value-only"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "tls-value", "{}", text(&out));
    // Without a client certificate: refused (--client-cert-auth).
    let out = c.etcdctl(&[&flags[0], "put", "tls-key", "x"]);
    assert!(!out.status.success(), "etcdctl without a client certificate was served: {}", text(&out));
    // Trusting another CA: etcdctl refuses the server.
    let out = c.etcdctl(&[&format!("--cacert={}", s(&other.pem)), &flags[1], &flags[2], "get", "tls-key"]);
    assert!(!out.status.success(), "etcdctl trusted a server its CA did not sign: {}", text(&out));

    // The etcd-client crate with its TLS options: served; with another CA: refused.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let grpc = format!("https://127.0.0.1:{}", c.grpc + 2);
    let connect = |ca_pem: &Path| {
        use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};
        let tls = TlsOptions::new()
            .ca_certificate(Certificate::from_pem(std::fs::read(ca_pem).unwrap()))
            .identity(Identity::from_pem(std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap()));
        let options = ConnectOptions::new().with_tls(tls).with_timeout(Duration::from_secs(5));
        let grpc = grpc.clone();
        rt.block_on(async move {
            let mut client = etcd_client::Client::connect([grpc], Some(options)).await?;
            client.get("tls-key", None).await
        })
    };
    let got = connect(&ca).expect("etcd-client over TLS");
    assert_eq!(got.kvs()[0].value(), b"tls-value");
    assert!(connect(&other.pem).is_err(), "etcd-client trusted a server its CA did not sign");

    // A plain-TCP client gets no answer from the TLS listeners (a plain one says HTTP/1.1).
    for port in [c.api + 1, c.grpc + 1] {
        let answer = plain_http_answer(port);
        assert!(
            !answer.starts_with(b"HTTP/"),
            "port {port} answered plain HTTP: {:?}",
            String::from_utf8_lossy(&answer)
        );
    }

    // `ringleader lock` with the files: granted, the command run.
    let out = c.client(&["lock", "tls-lock", "--ttl", "5s", "--", "true"], &c.endpoint(1)).output().unwrap();
    assert!(out.status.success(), "ringleader lock over TLS: {}", text(&out));
    // Without --cacert an https endpoint is refused, in one line that names the flag.
    let out = ringleader()
        .args(["lock", "--endpoints", &c.endpoint(1), "tls-lock", "--ttl", "5s", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(err.contains("--cacert") && err.trim().lines().count() == 1, "{err}");
    // With another CA the server is not verified: refused, nothing sent.
    let out = ringleader()
        .args(["lease", "grant", "--ttl", "5s", "--endpoints", &c.endpoint(2)])
        .arg("--cacert")
        .arg(&other.pem)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("refused to talk"), "{}", text(&out));

    // The fake-server story: node 3 stopped, its API port taken by a process whose certificate
    // the cluster CA did not sign. `ringleader lock` refuses it and never sends the token.
    let token = "bearer-token-the-fake-must-never-see-31";
    let token_file = work.join("api.token");
    crate::common::write_private(&token_file, token);
    c.ctl("kill", 3);
    let (fake_cert, fake_key) = other.leaf(&work, "fake-node-3");
    let fake = FakeServer::start(c.api + 3, &fake_cert, &fake_key);
    let lock = |endpoints: &str, ca: &Path| {
        let mut cmd = ringleader();
        cmd.args(["lock", "--endpoints", endpoints, "victim", "--ttl", "5s", "--timeout", "5s"])
            .arg("--cacert")
            .arg(ca)
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .arg("--api-token-file")
            .arg(&token_file)
            .args(["--", "sh", "-c", "echo fencing=$RINGLEADER_FENCING_TOKEN"]);
        cmd.output().unwrap()
    };
    let out = lock(&c.endpoint(3), &ca);
    let said = text(&out);
    assert!(!out.status.success(), "the fake server granted the lock: {said}");
    assert!(said.contains("refused to talk") && !said.contains("9000000000"), "{said}");
    assert!(fake.connections() >= 1, "the client never reached the fake server");
    assert!(fake.received().is_empty(), "the fake server received: {:?}", fake.received());
    // The fake first among the endpoints: skipped, the lock taken from the real members.
    let all = format!("{},{},{}", c.endpoint(3), c.endpoint(1), c.endpoint(2));
    let out = lock(&all, &ca);
    let said = text(&out);
    assert!(out.status.success() && said.contains("fencing=") && !said.contains("9000000000"), "{said}");
    assert!(fake.received().is_empty(), "the fake server received: {:?}", fake.received());
    // The probe is live: a client told to trust the fake's CA does hand it the token (and
    // takes its fencing token), which is what verification prevents.
    let out = lock(&c.endpoint(3), &other.pem);
    assert!(fake.received().contains(token), "the fake records no request: {}", text(&out));
}

/// Three `serve` processes with peer TLS; node 3's certificate is from another CA, and it
/// trusts only that one. Nodes 1 and 2 elect a leader; each side refuses the other's TLS
/// handshake, so node 3 never learns of it.
#[test]
fn peers_with_another_ca_refuse_each_other() {
    let (peer, api) = (free_base(3, LANE), free_base(3, LANE));
    let dir = std::env::temp_dir().join(format!("ringleader-peer-tls-{}-{peer}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad) = (TestCa::new(&dir, "cluster-ca"), TestCa::new(&dir, "other-ca"));
    let secret = dir.join("cluster.secret");
    std::fs::write(&secret, "ab".repeat(32)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut nodes: Vec<Child> = Vec::new();
    let (tx, rx) = mpsc::channel::<String>();
    for id in 1..=3u16 {
        let ca = if id == 3 { &bad } else { &good };
        let (cert, key) = ca.leaf(&dir, &format!("node-{id}"));
        let mut cmd = ringleader();
        cmd.args(["serve", "--id", &id.to_string(), "--bootstrap", "--cluster-id", "peer-tls"])
            .args(["--listen", &format!("127.0.0.1:{}", peer + id)])
            .args(["--api", &format!("127.0.0.1:{}", api + id)]);
        for j in (1..=3u16).filter(|&j| j != id) {
            cmd.args(["--peer", &format!("{j}=127.0.0.1:{}", peer + j)]);
        }
        cmd.arg("--secret-file").arg(&secret).arg("--data-dir").arg(dir.join(format!("data-{id}")));
        cmd.arg("--peer-cert-file").arg(&cert).arg("--peer-key-file").arg(&key);
        cmd.arg("--peer-trusted-ca-file").arg(&ca.pem);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            cmd.spawn().expect("the ringleader binary starts")
        };
        let err = child.stderr.take().unwrap();
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        nodes.push(child);
    }
    let status = |id: u16| crate::common::try_call(api + id, "GET", "/status", None).map(|(_, v)| v);
    // Nodes 1 and 2 agree on a leader among themselves.
    let leader = until(START, "a leader of nodes 1 and 2", || {
        let (a, b) = (status(1)?, status(2)?);
        let l = a["leader"].as_u64()?;
        (b["leader"].as_u64() == Some(l) && l != 3).then_some(l)
    });
    // Both sides refuse node 3's handshakes: a line from node 3 about 1 or 2, and one from 1
    // or 2 about node 3.
    let (mut by_3, mut about_3) = (false, false);
    let t0 = Instant::now();
    let mut seen = Vec::new();
    while !(by_3 && about_3) {
        let line = rx
            .recv_timeout(BOUND.saturating_sub(t0.elapsed()))
            .unwrap_or_else(|_| panic!("no TLS refusal on both sides within {BOUND:?}: {seen:#?}"));
        if line.contains("TLS") && line.contains("refused") {
            by_3 |= line.starts_with("[id 3]");
            about_3 |= !line.starts_with("[id 3]") && line.contains("id 3");
            about_3 |= !line.starts_with("[id 3]") && line.contains("TLS handshake refused");
        }
        seen.push(line);
    }
    let three = status(3).expect("node 3 answers its API");
    assert_ne!(
        three["leader"].as_u64(),
        Some(leader),
        "node 3 followed a leader it could not verify: {three}"
    );
    for mut n in nodes {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(n.id() as i32, libc::SIGTERM) };
        let _ = n.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `cmd` to its exit, failing the test if it does not exit within [`BOUND`].
fn bounded(cmd: &mut Command) -> Output {
    let mut child = {
        let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > BOUND {
            let _ = child.kill();
            panic!("{cmd:?}: no exit within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Bad TLS files and flags: one line naming the flag (and the file), exit 1, never a panic;
/// a listener beyond the loopback without TLS is refused unless --insecure.
#[test]
fn bad_tls_input_is_one_line() {
    let dir = std::env::temp_dir().join(format!("ringleader-tls-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ca = TestCa::new(&dir, "ca");
    let (cert, _) = ca.leaf(&dir, "a");
    let (_, other_key) = ca.leaf(&dir, "b");
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let data = dir.join("data");
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, &[&str])> = vec![
        (
            vec!["--cert-file".into(), p(&dir.join("missing.pem")), "--key-file".into(), p(&junk)],
            &["--cert-file", "missing.pem"],
        ),
        (
            vec!["--cert-file".into(), p(&junk), "--key-file".into(), p(&junk)],
            &["--cert-file", "no certificate"],
        ),
        (
            vec!["--cert-file".into(), p(&cert), "--key-file".into(), p(&junk)],
            &["--key-file", "no private key"],
        ),
        (
            vec!["--cert-file".into(), p(&cert), "--key-file".into(), p(&other_key)],
            &["--cert-file", "--key-file"],
        ),
        (vec!["--cert-file".into(), p(&cert)], &["--cert-file needs --key-file"]),
        (vec!["--peer-cert-file".into(), p(&cert)], &["--peer-key-file", "--peer-trusted-ca-file"]),
        (vec!["--api".into(), "0.0.0.0:0".into()], &["--api", "TLS", "--insecure"]),
        (vec!["--listen".into(), "0.0.0.0:0".into()], &["--listen", "--peer-cert-file", "--insecure"]),
    ];
    for (args, says) in cases {
        // Bounded: a node that started after all would serve until killed.
        let mut cmd = ringleader();
        cmd.arg("serve").args(&args);
        for flag in ["--listen", "--api"] {
            if !args.iter().any(|a| a == flag) {
                cmd.args([flag, "127.0.0.1:0"]);
            }
        }
        let out = bounded(cmd.arg("--data-dir").arg(&data));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "serve {args:?}: {}", text(&out));
        assert_eq!(err.trim().lines().count(), 1, "serve {args:?}: one line: {err}");
        assert!(says.iter().all(|s| err.contains(s)), "serve {args:?}: {err}");
    }
    for (args, says) in [
        (vec!["lease", "--endpoints", "https://127.0.0.1:1", "grant", "--ttl", "1s"], &["--cacert"][..]),
        (
            vec![
                "lease",
                "--endpoints",
                "http://127.0.0.1:1",
                "--cacert",
                &p(&ca.pem),
                "grant",
                "--ttl",
                "1s",
            ],
            &["https://"],
        ),
        (
            vec![
                "lease",
                "--endpoints",
                "https://127.0.0.1:1",
                "--cacert",
                &p(&junk),
                "grant",
                "--ttl",
                "1s",
            ],
            &["--cacert", "junk.pem"],
        ),
    ] {
        let out = ringleader().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(says.iter().all(|s| err.contains(s)), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
