//! `ringleader lock`, `elect` and `lease`: argument errors (one line, exit 1), no reachable
//! node, and a command run under a lock against a tiny fake service. Runs against the real
//! service are in the service's own tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(args)
        .env_remove("RINGLEADER_ENDPOINTS")
        .output()
        .expect("ringleader runs")
}

/// Runs `args`, expects exit 1 with one stderr line containing every `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let out = ringleader(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{args:?} should be refused; stderr: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(err.lines().count(), 1, "{args:?}: one line expected, got: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} should say {n:?}");
    }
}

/// An endpoint nothing listens on.
fn nobody() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

#[test]
fn bad_arguments_get_one_line() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["lock"], &["required"]),
        (&["lock", "db", "--ttl", "abc"], &["--ttl", "not a duration"]),
        (&["lock", "db", "--ttl", "5ms"], &["--ttl", "at least 10ms"]),
        (&["lock", "db", "--timeout", "0"], &["--timeout", "at least 1ms"]),
        (&["lock", "db", "--endpoints", "ftp://x"], &["--endpoints", "http://HOST:PORT"]),
        (&["lock", "a/b", "--endpoints", "http://127.0.0.1:9"], &["a/b"]),
        (&["elect", "e", "--observe", "--value", "x"], &["--observe", "--value"]),
        (&["elect", "e", "--observe", "--", "true"], &["--observe"]),
        (&["lease", "revoke", "abc"], &["abc"]),
        (&["lease", "grant", "--ttl", "2h"], &["--ttl"]),
        (&["lease", "frobnicate"], &["frobnicate"]),
    ];
    for (args, needles) in cases {
        refused(args, needles);
    }
}

#[test]
fn no_reachable_node_is_named() {
    let (a, b) = (nobody(), nobody());
    let both = format!("{a},{b}");
    refused(&["lock", "db", "--endpoints", &both, "--", "true"], &["no service node answered", &a, &b]);
    refused(&["elect", "e", "--endpoints", &a], &["no service node answered", &a]);
    refused(&["lease", "ttl", "3", "--endpoints", &a], &["lease 3", &a]);
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["lease", "revoke", "3"])
        .env("RINGLEADER_ENDPOINTS", &b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&b));
}

/// A fake service answering every request with a canned success, one connection at a time.
fn fake_service() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let path = first.split_whitespace().nth(1).unwrap_or("");
            let answer = match path {
                "/v1/lease/grant" | "/v1/lease/keepalive" => r#"{"lease": 17, "ttl_ms": 10000}"#,
                "/v1/lock/acquire" => r#"{"name": "db", "lease": 17, "fencing": 42}"#,
                _ => r#"{"lease": 17}"#,
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    url
}

#[test]
fn the_command_runs_with_the_fencing_token_and_its_status_is_the_exit_status() {
    let url = fake_service();
    let script = "echo \"$RINGLEADER_LOCK $RINGLEADER_FENCING_TOKEN $RINGLEADER_LEASE\"; exit 7";
    let out = ringleader(&["lock", "db", "--endpoints", &url, "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "db 42 17\n");
}
