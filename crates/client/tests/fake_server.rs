//! The client against a tiny fake HTTP server answering canned responses: endpoint failover,
//! guards releasing on drop, a lost connection during an acquire, sessions ending.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ringleader_client::{Client, ClientError, Leader, LockLoss, Session, SessionEnd};

/// A request as the fake server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    body: String,
    /// The `Idempotency-Key` header, if sent.
    key: Option<String>,
}

/// What the fake server does with a request.
enum Reply {
    /// Answer `status` with `body`.
    With(u16, String),
    /// Close the connection without answering.
    Hang,
}

fn ok(body: &str) -> Reply {
    Reply::With(200, body.to_string())
}

fn err(status: u16, reason: &str) -> Reply {
    Reply::With(status, format!(r#"{{"error": "canned", "reason": "{reason}"}}"#))
}

type Handler = Box<dyn FnMut(&Seen) -> Reply + Send>;

/// A server on 127.0.0.1 answering each request with `handler`, one connection at a time;
/// every request is also sent on the returned receiver.
fn serve(mut handler: Handler) -> (String, Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            if !answer(stream, &mut handler, &tx) {
                return;
            }
        }
    });
    (url, rx)
}

/// Reads one request from `stream` and answers it; false when the test has gone.
fn answer(stream: TcpStream, handler: &mut Handler, tx: &Sender<Seen>) -> bool {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return true;
    }
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let mut length = 0;
    let mut key = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return true;
        }
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("idempotency-key")
        {
            key = Some(v.trim().to_string());
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let seen = Seen { method, path, body: String::from_utf8(body).unwrap(), key };
    let mut stream = stream;
    if seen.path == "/health" {
        // The client's probe before a request that waits or must not be sent twice: this
        // server is alive (a hung one is tested with a listener that never answers).
        let body = r#"{"status": "alive"}"#;
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body.as_bytes());
        return true;
    }
    let reply = handler(&seen);
    if tx.send(seen).is_err() {
        return false;
    }
    if let Reply::With(status, body) = reply {
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body.as_bytes());
    }
    true
}

/// An endpoint nothing listens on.
fn refused() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

fn next(rx: &Receiver<Seen>) -> Seen {
    rx.recv_timeout(Duration::from_secs(10)).expect("a request reaches the fake server")
}

#[test]
fn a_refused_connection_goes_to_the_next_endpoint_which_is_remembered() {
    let down = refused();
    let (up, rx) = serve(Box::new(|_| ok(r#"{"lease": 17, "ttl_ms": 2000}"#)));
    let client = Client::new([down.as_str(), up.as_str()]).unwrap();
    assert_eq!(client.grant(Duration::from_secs(2)).unwrap().lease, 17);
    // The grant carries the key the client drew, and the keep-alive that key.
    let grant: serde_json::Value = serde_json::from_str(&next(&rx).body).unwrap();
    let key = grant["key"].as_str().expect("the grant sends a key").to_string();
    assert!(key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()), "{key}");
    assert_eq!(grant["ttl_ms"], 2000);
    assert_eq!(client.lease_key(17), Some(key.clone()));
    assert_eq!(client.current_endpoint(), up);
    client.keep_alive(17).unwrap();
    let kept = next(&rx);
    assert_eq!(kept.path, "/v1/lease/keepalive");
    assert_eq!(kept.body, serde_json::json!({ "lease": 17, "key": key }).to_string());
}

#[test]
fn a_503_goes_to_the_next_endpoint() {
    let (busy, busy_rx) = serve(Box::new(|_| err(503, "unavailable")));
    let (up, up_rx) = serve(Box::new(|_| ok(r#"{"lease": 5, "ttl_ms": 100, "remaining_ms": 60}"#)));
    let client = Client::new([busy.as_str(), up.as_str()]).unwrap();
    let info = client.time_to_live(5).unwrap();
    assert_eq!(info.remaining_ms, 60);
    assert_eq!(next(&busy_rx).path, "/v1/lease/5");
    assert_eq!(next(&up_rx).method, "GET");
    // The second request goes straight to the endpoint that answered.
    client.time_to_live(5).unwrap();
    next(&up_rx);
    assert!(busy_rx.try_recv().is_err());
}

#[test]
fn when_no_endpoint_answers_every_one_is_named() {
    let (a, b) = (refused(), refused());
    let (busy, _rx) = serve(Box::new(|_| err(503, "unavailable")));
    let client = Client::new([a.as_str(), b.as_str(), busy.as_str()]).unwrap();
    match client.status() {
        Err(ClientError::Unavailable { tried }) => assert_eq!(tried, vec![a, b, busy]),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// A 503 naming the leader's endpoint, as a node that could not get a request committed answers.
fn unavailable_hinting(leader: &str) -> Reply {
    Reply::With(
        503,
        format!(r#"{{"error": "canned", "reason": "unavailable", "leader": 3, "leader_url": "{leader}/"}}"#),
    )
}

#[test]
fn a_503_naming_the_leader_sends_the_next_attempt_to_it_out_of_turn() {
    let (leader, leader_rx) = serve(Box::new(|_| ok(r#"{"lease": 5, "ttl_ms": 100, "remaining_ms": 60}"#)));
    let (other, other_rx) = serve(Box::new(|_| err(503, "unavailable")));
    let hint = leader.clone();
    let (follower, follower_rx) = serve(Box::new(move |_| unavailable_hinting(&hint)));
    let client = Client::new([follower.as_str(), other.as_str(), leader.as_str()]).unwrap();
    assert_eq!(client.time_to_live(5).unwrap().remaining_ms, 60);
    next(&follower_rx);
    next(&leader_rx);
    // The endpoint between them in the list was skipped.
    assert!(other_rx.try_recv().is_err());
    assert_eq!(client.current_endpoint(), leader);
}

#[test]
fn a_leader_hint_naming_an_endpoint_the_client_was_not_given_is_not_followed() {
    let (stranger, stranger_rx) =
        serve(Box::new(|_| ok(r#"{"lease": 5, "ttl_ms": 100, "remaining_ms": 60}"#)));
    let hint = stranger.clone();
    let (follower, _follower_rx) = serve(Box::new(move |_| unavailable_hinting(&hint)));
    let (busy, busy_rx) = serve(Box::new(|_| err(503, "unavailable")));
    let client = Client::new([follower.as_str(), busy.as_str()]).unwrap();
    match client.time_to_live(5) {
        Err(ClientError::Unavailable { tried }) => assert_eq!(tried, vec![follower, busy]),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    next(&busy_rx);
    assert!(stranger_rx.try_recv().is_err(), "the client went to a host it was not given");
}

#[test]
fn nodes_hinting_at_each_other_cannot_make_the_client_loop() {
    // a names b, b names a: each endpoint is jumped to at most once per request.
    let a_cell = Arc::new(Mutex::new(String::new()));
    let cell = a_cell.clone();
    let (b, b_rx) = serve(Box::new(move |_| unavailable_hinting(&cell.lock().unwrap())));
    let hint_b = b.clone();
    let (a, a_rx) = serve(Box::new(move |_| unavailable_hinting(&hint_b)));
    *a_cell.lock().unwrap() = a.clone();
    let (c, c_rx) = serve(Box::new(|_| err(503, "unavailable")));
    let client = Client::new([a.as_str(), b.as_str(), c.as_str()]).unwrap();
    match client.time_to_live(5) {
        Err(ClientError::Unavailable { tried }) => assert_eq!(tried, vec![a, b, c]),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    // One round of three, plus one attempt for each of the two hints followed.
    let count = |rx: &Receiver<Seen>| rx.try_iter().count();
    assert_eq!((count(&a_rx), count(&b_rx), count(&c_rx)), (2, 2, 1));
}

#[test]
fn errors_come_back_typed() {
    let (url, _rx) = serve(Box::new(|s| match s.path.as_str() {
        "/v1/lease/9" => err(404, "no_such_lease"),
        _ => Reply::With(409, r#"{"error": "delay", "reason": "lock_delay", "until_ms": 77}"#.into()),
    }));
    let client = Client::new([url]).unwrap();
    assert_eq!(client.time_to_live(9), Err(ClientError::NoSuchLease));
    assert_eq!(client.leader("e"), Err(ClientError::LockDelay { until: 77 }));
}

/// A grant whose outcome is unknown (the node took it and the connection broke) is sent to the
/// next endpoint with the same idempotency key, which the service applies at most once; the
/// next grant gets a new key of the same session.
#[test]
fn a_grant_cut_off_after_sending_is_sent_again_with_the_same_idempotency_key() {
    let (first, first_rx) = serve(Box::new(|_| Reply::Hang));
    let (second, second_rx) = serve(Box::new(|_| ok(r#"{"lease": 1, "ttl_ms": 1000}"#)));
    let client = Client::new([first, second]).unwrap();
    assert_eq!(client.grant(Duration::from_secs(1)).unwrap().lease, 1);
    let (sent, again) = (next(&first_rx), next(&second_rx));
    assert_eq!(again.path, "/v1/lease/grant");
    let key = sent.key.expect("a grant carries an Idempotency-Key");
    assert_eq!(again.key.as_deref(), Some(key.as_str()), "the retry repeats the key");
    let (session, seq) = key.split_once(':').expect("SESSION:SEQ");
    let (session, seq): (u64, u64) = (session.parse().unwrap(), seq.parse().unwrap());
    assert!((1..1 << 63).contains(&session), "{key}");
    client.grant(Duration::from_secs(1)).unwrap();
    assert_eq!(next(&second_rx).key, Some(format!("{session}:{}", seq + 1)), "a new request, a new key");
    client.keep_alive(1).unwrap();
    assert_eq!(next(&second_rx).key, None, "a keep-alive needs none");
}

/// The guard watches its lock: when the service says another lease holds it, the guard reports
/// the lock taken although the session lives on.
#[test]
fn a_guard_reports_its_lock_taken_from_its_live_lease() {
    let taken = Arc::new(Mutex::new(false));
    let flag = Arc::clone(&taken);
    let mut inner = service(Arc::new(Mutex::new(Vec::new())));
    let (url, _rx) = serve(Box::new(move |s| match s.path.as_str() {
        "/v1/lock/db" if *flag.lock().unwrap() => {
            ok(r#"{"name": "db", "holder": {"lease": 99, "fencing": 50}}"#)
        }
        "/v1/lock/db" => ok(r#"{"name": "db", "holder": {"lease": 17, "fencing": 42}}"#),
        _ => inner(s),
    }));
    let client = Client::new([url]).unwrap();
    let session = Session::new(&client, Duration::from_millis(300)).unwrap();
    let guard = session.lock("db", None).unwrap();
    assert!(guard.is_held());
    *taken.lock().unwrap() = true;
    assert_eq!(guard.wait_lost(Duration::from_secs(10)), Some(LockLoss::Taken));
    assert!(!guard.is_held());
    assert!(session.is_alive(), "the lease lives on");
}

/// The guard reports the end of its session as the loss of its lock, as soon as it happens.
#[test]
fn a_guard_reports_its_session_lost() {
    let (url, _rx) = serve(Box::new(|s| match s.path.as_str() {
        "/v1/lease/grant" => ok(r#"{"lease": 3, "ttl_ms": 300}"#),
        "/v1/lease/keepalive" => err(404, "no_such_lease"),
        "/v1/lock/acquire" => ok(r#"{"name": "db", "lease": 3, "fencing": 8}"#),
        "/v1/lock/db" => ok(r#"{"name": "db", "holder": {"lease": 3, "fencing": 8}}"#),
        _ => ok(r#"{"lease": 3}"#),
    }));
    let client = Client::new([url]).unwrap();
    let session = Session::new(&client, Duration::from_millis(300)).unwrap();
    let guard = session.lock("db", None).unwrap();
    assert_eq!(guard.wait_lost(Duration::from_secs(10)), Some(LockLoss::Session(SessionEnd::Expired)));
}

#[test]
fn a_hung_endpoint_is_given_the_attempt_timeout_then_the_next_is_tried() {
    // A listener that accepts (the kernel does) but never reads nor answers: a stopped process.
    let hung = TcpListener::bind("127.0.0.1:0").unwrap();
    let hung_url = format!("http://{}", hung.local_addr().unwrap());
    let (up, rx) = serve(Box::new(|s| match s.path.as_str() {
        "/v1/lease/grant" => ok(r#"{"lease": 3, "ttl_ms": 1000}"#),
        _ => ok(r#"{"lease": 3, "ttl_ms": 1000, "remaining_ms": 900}"#),
    }));
    let client = Client::new([hung_url.as_str(), up.as_str()])
        .unwrap()
        .with_attempt_timeout(Duration::from_millis(200));
    // A grant (not sent twice) goes on once the hung node failed its health probe; a read
    // gets the attempt timeout.
    assert_eq!(client.grant(Duration::from_secs(1)).unwrap().lease, 3);
    assert_eq!(next(&rx).path, "/v1/lease/grant");
    let client = Client::new([hung_url.as_str(), up.as_str()])
        .unwrap()
        .with_attempt_timeout(Duration::from_millis(200));
    assert_eq!(client.time_to_live(3).unwrap().remaining_ms, 900);
    assert_eq!(next(&rx).path, "/v1/lease/3");
    drop(hung);
}

/// A fake service with one lock and one election, enough for sessions and guards.
fn service(log: Arc<Mutex<Vec<String>>>) -> Handler {
    Box::new(move |s| {
        log.lock().unwrap().push(s.path.clone());
        match s.path.as_str() {
            "/v1/lease/grant" => ok(r#"{"lease": 17, "ttl_ms": 3000}"#),
            "/v1/lease/keepalive" => ok(r#"{"lease": 17, "ttl_ms": 3000}"#),
            "/v1/lease/revoke" => ok(r#"{"lease": 17}"#),
            "/v1/lock/acquire" => ok(r#"{"name": "db", "lease": 17, "fencing": 42}"#),
            "/v1/lock/release" => ok(r#"{"name": "db", "lease": 17}"#),
            "/v1/election/campaign" => {
                ok(r#"{"election": "e", "leader": {"lease": 17, "value": "a", "index": 40}}"#)
            }
            "/v1/election/proclaim" | "/v1/election/resign" => ok(r#"{"election": "e", "lease": 17}"#),
            _ => err(404, "not_found"),
        }
    })
}

#[test]
fn guards_release_and_sessions_revoke_when_dropped() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (url, rx) = serve(service(Arc::clone(&log)));
    let client = Client::new([url]).unwrap();
    let session = Session::new(&client, Duration::from_secs(3)).unwrap();
    assert!(session.is_alive());
    assert_eq!(session.lease(), 17);
    {
        let guard = session.lock("db", Some(Duration::from_secs(1))).unwrap();
        assert_eq!(guard.fencing(), 42);
        let acquire = std::iter::repeat_with(|| next(&rx)).find(|s| s.path == "/v1/lock/acquire").unwrap();
        assert!(acquire.body.contains(r#""timeout_ms":1000"#), "{}", acquire.body);
        assert!(acquire.body.contains(r#""wait":true"#), "{}", acquire.body);
    }
    {
        let mut leading = session.campaign("e", "a", None).unwrap();
        assert_eq!(leading.leader(), &Leader { lease: 17, value: "a".into(), index: 40 });
        leading.proclaim("b").unwrap();
        assert_eq!(leading.leader().value, "b");
    }
    drop(session);
    let paths: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|p| !p.ends_with("keepalive") && *p != "/v1/lock/db")
        .cloned()
        .collect();
    assert_eq!(
        paths,
        [
            "/v1/lease/grant",
            "/v1/lock/acquire",
            "/v1/lock/release",
            "/v1/election/campaign",
            "/v1/election/proclaim",
            "/v1/election/resign",
            "/v1/lease/revoke"
        ]
    );
}

#[test]
fn an_acquire_cut_off_while_waiting_is_asked_again_on_the_next_endpoint() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (good, good_rx) = serve(service(Arc::clone(&log)));
    // The first node takes the acquire and drops the connection, as a node that dies would.
    let mut inner = service(Arc::new(Mutex::new(Vec::new())));
    let (flaky, flaky_rx) =
        serve(Box::new(move |s| if s.path == "/v1/lock/acquire" { Reply::Hang } else { inner(s) }));
    let client = Client::new([flaky, good]).unwrap();
    let session = Session::new(&client, Duration::from_secs(3)).unwrap();
    assert_eq!(next(&flaky_rx).path, "/v1/lease/grant");
    let guard = session.lock("db", None).unwrap();
    assert_eq!(guard.fencing(), 42);
    assert_eq!(next(&flaky_rx).path, "/v1/lock/acquire");
    let again = next(&good_rx);
    assert_eq!(again.path, "/v1/lock/acquire");
    assert!(again.body.contains(r#""lease":17"#));
    drop(guard);
}

#[test]
fn a_session_the_service_forgot_is_lost() {
    // Keep-alives every 100 ms (a third of 300 ms) are answered "no such lease".
    let (url, _rx) = serve(Box::new(|s| match s.path.as_str() {
        "/v1/lease/grant" => ok(r#"{"lease": 3, "ttl_ms": 300}"#),
        "/v1/lease/keepalive" => err(404, "no_such_lease"),
        _ => ok(r#"{"lease": 3}"#),
    }));
    let client = Client::new([url]).unwrap();
    let session = Session::new(&client, Duration::from_millis(300)).unwrap();
    assert_eq!(session.wait_lost(Duration::from_secs(10)), Some(SessionEnd::Expired));
    assert!(!session.is_alive());
    assert_eq!(session.lock("db", None).unwrap_err(), ClientError::NoSuchLease);
}

#[test]
fn a_session_without_keep_alives_stops_being_trusted() {
    // Keep-alives fail with 503 everywhere: the session ends when its trusted time runs out,
    // not later.
    let (url, _rx) = serve(Box::new(|s| match s.path.as_str() {
        "/v1/lease/grant" => ok(r#"{"lease": 4, "ttl_ms": 200}"#),
        "/v1/lease/keepalive" => err(503, "unavailable"),
        _ => ok(r#"{"lease": 4}"#),
    }));
    let client = Client::new([url]).unwrap();
    let session = Session::new(&client, Duration::from_millis(200)).unwrap();
    let end = session.wait_lost(Duration::from_secs(10));
    assert_eq!(end, Some(SessionEnd::Untrusted));
    assert!(std::time::Instant::now() >= session.valid_until());
}

#[test]
fn observe_reads_the_event_stream_and_a_refusal_is_typed() {
    let (url, _rx) = serve(Box::new(|s| match s.path.as_str() {
        "/v1/election/e/observe" => ok(concat!(
            ": stream\n\n",
            "event: leader\ndata: {\"election\": \"e\", \"leader\": {\"lease\": 2, \"value\": \"x\", \"index\": 9}}\n\n",
            "event: leader\ndata: {\"election\": \"e\", \"leader\": null}\n\n",
        )),
        _ => err(400, "bad_request"),
    }));
    let client = Client::new([url]).unwrap();
    let leaders: Vec<_> = client.observe("e").unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(leaders, vec![Some(Leader { lease: 2, value: "x".into(), index: 9 }), None]);
    assert!(matches!(client.watch(5), Err(ClientError::BadRequest(_))));
}
