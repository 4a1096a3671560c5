//! A node under hostile input: every bad connection is logged, counted and closed, and the
//! node keeps serving. Real TCP on loopback, bounded waits, no sleeps.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ringleader_net::wire::{self, Envelope, Hello};
use ringleader_net::{NodeConfig, NodeHandle};

async fn node(max_connections: usize) -> NodeHandle {
    node_of(max_connections, 2..=2).await
}

/// [`node`] with peers of the ids `peers` (all unreachable).
async fn node_of(max_connections: usize, peers: std::ops::RangeInclusive<u64>) -> NodeHandle {
    let peers = peers.map(|id| (id, "127.0.0.1:9".to_string())).collect();
    let mut cfg = NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), peers, "central");
    cfg.api = Some("127.0.0.1:0".parse().unwrap());
    cfg.max_frame = 1024;
    cfg.max_connections = max_connections;
    ringleader_net::start(cfg).await.expect("node starts")
}

fn counter(h: &NodeHandle, name: &str) -> u64 {
    h.shared.counters.list().into_iter().find(|c| c.0 == name).expect("counter exists").2
}

/// Waits (bounded) until `name` reaches `at_least`.
async fn wait_counter(h: &NodeHandle, name: &str, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while counter(h, name) < at_least {
        assert!(Instant::now() < deadline, "{name} stayed at {} (< {at_least})", counter(h, name));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends `bytes` (then half-closes when `eof`) and checks that the node closes the connection.
async fn send_and_expect_close(addr: SocketAddr, bytes: Vec<u8>, eof: bool) {
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&bytes).unwrap();
        if eof {
            s.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let mut buf = [0u8; 16];
        // The node never writes on an inbound connection: the read ends with EOF (or a reset).
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "the node closed the connection");
    })
    .await
    .unwrap();
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

fn hello(version: u16, algorithm: &str, sender: u64) -> Vec<u8> {
    let h = Hello { version, ..Hello::new(algorithm, sender) };
    frame(&wire::encode(&h))
}

async fn api_status(h: &NodeHandle) -> serde_json::Value {
    let addr = h.api.unwrap();
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_bytes_are_refused() {
    let h = node(64).await;
    send_and_expect_close(h.listen, frame(&[0xde, 0xad, 0xbe, 0xef, 0x01]), false).await;
    wait_counter(&h, "frame_errors", 1).await;
    // An HTTP request on the peer port reads as a 1.2 GB frame: refused as oversized.
    send_and_expect_close(h.listen, b"GET / HTTP/1.1\r\n\r\n".to_vec(), false).await;
    wait_counter(&h, "frame_errors", 2).await;
    assert_eq!(counter(&h, "connections_rejected"), 2);
    assert_eq!(api_status(&h).await["id"], 1, "the node keeps serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_and_oversized_frames_are_refused() {
    let h = node(64).await;
    let mut truncated = hello(wire::PROTOCOL_VERSION, "central", 2);
    truncated.extend_from_slice(&[0, 0, 0, 100, 1, 2, 3]);
    send_and_expect_close(h.listen, truncated, true).await;
    wait_counter(&h, "frame_errors", 1).await;
    assert_eq!(counter(&h, "connections_accepted"), 1, "the hello itself was fine");
    let mut oversized = hello(wire::PROTOCOL_VERSION, "central", 2);
    oversized.extend_from_slice(&2000u32.to_be_bytes());
    oversized.extend_from_slice(&[0; 64]);
    send_and_expect_close(h.listen, oversized, false).await;
    wait_counter(&h, "frame_errors", 2).await;
    // A well-framed envelope that is not a central message.
    let mut bad_msg = hello(wire::PROTOCOL_VERSION, "central", 2);
    bad_msg.extend(frame(&wire::encode(&Envelope { msg_id: 1, lamport: 1, vector: vec![1, 0], msg: 9u8 })));
    send_and_expect_close(h.listen, bad_msg, false).await;
    wait_counter(&h, "frame_errors", 3).await;
    assert_eq!(counter(&h, "messages_received"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_version_algorithm_or_sender_is_refused() {
    let h = node(64).await;
    send_and_expect_close(h.listen, hello(wire::PROTOCOL_VERSION + 1, "central", 2), false).await;
    send_and_expect_close(h.listen, hello(wire::PROTOCOL_VERSION, "chang-roberts", 2), false).await;
    send_and_expect_close(h.listen, hello(wire::PROTOCOL_VERSION, "central", 77), false).await;
    send_and_expect_close(h.listen, hello(wire::PROTOCOL_VERSION, "central", 1), false).await;
    wait_counter(&h, "handshake_errors", 4).await;
    assert_eq!(counter(&h, "connections_accepted"), 0);
    assert_eq!(counter(&h, "frame_errors"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_peer_is_delivered_to_the_algorithm() {
    let h = node(64).await;
    let mut good = hello(wire::PROTOCOL_VERSION, "central", 2);
    let request = ringleader_algorithms::mutex::central::Msg::Request;
    good.extend(frame(&wire::encode(&Envelope {
        msg_id: (2 << 40) | 7,
        lamport: 3,
        vector: vec![0, 3],
        msg: request,
    })));
    let addr = h.listen;
    let s = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&good).unwrap();
        s
    })
    .await
    .unwrap();
    wait_counter(&h, "messages_received", 1).await;
    // The coordinator (position 0) queued the request and granted it: a GRANT goes to id 2.
    wait_counter(&h, "events", 2).await;
    assert_eq!(counter(&h, "connections_rejected"), 0);
    drop(s);
}

/// Connections in their handshake and proven peers' connections are capped apart: strangers
/// beyond the handshake cap each close the oldest stranger, never a peer; a peer's newer
/// connection replaces its older one; only proven peers fill the peers' cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_flood_cannot_keep_a_real_peer_out() {
    use ringleader_transport::peer::MAX_HANDSHAKES;
    let h = node_of(1, 2..=3).await;
    let addr = h.listen;
    // Silent connections beyond the handshake cap each close the oldest one.
    let flood = tokio::task::spawn_blocking(move || {
        (0..MAX_HANDSHAKES + 40).map(|_| TcpStream::connect(addr).unwrap()).collect::<Vec<_>>()
    })
    .await
    .unwrap();
    wait_counter(&h, "handshakes_evicted", 40).await;
    assert_eq!(api_status(&h).await["counters"]["handshakes_evicted"].as_u64().unwrap(), 40);
    // While the flood's last connections fill the handshake pool, a real peer still gets in.
    let hello_from = |id: u64| {
        let bytes = hello(wire::PROTOCOL_VERSION, "central", id);
        tokio::task::spawn_blocking(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(&bytes).unwrap();
            s
        })
    };
    let mut first = hello_from(2).await.unwrap();
    wait_counter(&h, "connections_accepted", 1).await;
    assert_eq!(counter(&h, "connections_over_limit"), 0);
    // The same peer again (it restarted): its newer connection replaces the older one.
    let second = hello_from(2).await.unwrap();
    wait_counter(&h, "connections_accepted", 2).await;
    let n = tokio::task::spawn_blocking(move || first.read(&mut [0u8; 4]).unwrap_or(0)).await.unwrap();
    assert_eq!(n, 0, "the older connection of id 2 was closed");
    // Another peer while id 2 holds the only slot of the peers' pool: refused.
    let late = hello_from(3).await.unwrap();
    wait_counter(&h, "connections_over_limit", 1).await;
    assert_eq!(counter(&h, "connections_accepted"), 2);
    drop((flood, second, late));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_outgoing_queue_drops_and_counts() {
    // Chang-Roberts on the ring 1 → 2 → 3 → 1: node 1 forwards every ELECTED(3) to id 2, which
    // never answers; its queue holds 2 messages, the rest are dropped and counted.
    let mut cfg = NodeConfig::new(
        1,
        "127.0.0.1:0".parse().unwrap(),
        vec![(2, "127.0.0.1:9".into()), (3, "127.0.0.1:9".into())],
        "chang-roberts",
    );
    cfg.queue_capacity = 2;
    let h = ringleader_net::start(cfg).await.expect("node starts");
    let mut bytes = hello(wire::PROTOCOL_VERSION, "chang-roberts", 3);
    for i in 0..10 {
        let msg = ringleader_algorithms::election::chang_roberts::Msg::Elected(3);
        bytes.extend(frame(&wire::encode(&Envelope {
            msg_id: (3 << 40) | i,
            lamport: i,
            vector: vec![0, 0, i],
            msg,
        })));
    }
    let addr = h.listen;
    let s = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&bytes).unwrap();
        s
    })
    .await
    .unwrap();
    wait_counter(&h, "messages_dropped_queue_full", 8).await;
    assert_eq!(counter(&h, "messages_received"), 10);
    assert_eq!(counter(&h, "messages_dropped_queue_full"), 8);
    let status = h.shared.status();
    assert_eq!(status.leader, Some(3));
    assert_eq!(status.peers.iter().find(|p| p.id == 2).unwrap().queued, 2);
    assert!(!status.peers[0].connected);
    drop(s);
}

/// Issue 13 §5: peers that say a valid hello and then nothing no longer hold the node's
/// connection slots for good. 64 of them fill the peers' cap (a 65th peer is refused); within
/// the idle timeout the node closes every one, counts it, and a real peer gets in again.
/// (Before the idle timeout existed the slots stayed taken forever and the reads below timed
/// out.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_peers_are_closed_after_the_idle_timeout() {
    let h = node_of(64, 2..=66).await;
    let addr = h.listen;
    let silent = tokio::task::spawn_blocking(move || {
        (2..=65)
            .map(|id| {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(&hello(wire::PROTOCOL_VERSION, "central", id)).unwrap();
                s
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    wait_counter(&h, "connections_accepted", 64).await;
    let extra = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&hello(wire::PROTOCOL_VERSION, "central", 66)).unwrap();
        s
    })
    .await
    .unwrap();
    wait_counter(&h, "connections_over_limit", 1).await;
    drop(extra);
    let limit = ringleader_net::DEFAULT_PEER_IDLE_TIMEOUT + Duration::from_secs(10);
    tokio::task::spawn_blocking(move || {
        for mut s in silent {
            s.set_read_timeout(Some(limit)).unwrap();
            let mut buf = [0u8; 16];
            let n = s.read(&mut buf).unwrap_or_else(|e| panic!("the node kept a silent connection: {e}"));
            assert_eq!(n, 0);
        }
    })
    .await
    .unwrap();
    wait_counter(&h, "connections_idle_closed", 64).await;
    assert_eq!(counter(&h, "frame_errors"), 0, "silence is not a bad frame");
    let s = {
        let bytes = hello(wire::PROTOCOL_VERSION, "central", 66);
        tokio::task::spawn_blocking(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&bytes).unwrap();
            s
        })
        .await
        .unwrap()
    };
    wait_counter(&h, "connections_accepted", 65).await;
    drop(s);
}

/// A node with an HTTP API whose idle timeout is `idle` (and optionally a bearer token).
async fn api_node(idle: Duration, token: Option<&str>) -> NodeHandle {
    let mut cfg =
        NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), vec![(2, "127.0.0.1:9".into())], "central");
    cfg.api = Some("127.0.0.1:0".parse().unwrap());
    cfg.api_idle_timeout = idle;
    cfg.api_token = token.map(|t| ringleader_net::api::ApiToken::new(t).unwrap());
    ringleader_net::start(cfg).await.expect("node starts")
}

/// Sends `bytes` to the API, then reads until the node closes; returns what it answered and
/// how long it took to close.
async fn api_exchange(addr: SocketAddr, bytes: &'static [u8]) -> (String, Duration) {
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let t0 = Instant::now();
        s.write_all(bytes).unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        (String::from_utf8_lossy(&answer).to_string(), t0.elapsed())
    })
    .await
    .unwrap()
}

/// Issue 13 §5: API connections do not stay open for free. A connection that sends nothing, one
/// that sends half a request head and stops, and an idle keep-alive connection after its answer
/// are all closed after the idle timeout; the node keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_api_connections_are_closed() {
    let h = api_node(Duration::from_millis(300), None).await;
    let api = h.api.unwrap();
    let (answer, took) = api_exchange(api, b"").await;
    assert_eq!(answer, "");
    assert!(took < Duration::from_secs(10), "idle connection closed after {took:?}");
    let (answer, took) = api_exchange(api, b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await;
    assert!(!answer.contains("200 OK"), "{answer}");
    assert!(took < Duration::from_secs(10), "half a head closed after {took:?}");
    let (answer, took) = api_exchange(api, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(took < Duration::from_secs(10), "idle keep-alive closed after {took:?}");
    assert_eq!(api_status(&h).await["id"], 1, "the node keeps serving");
}

/// Issue 13 §5: with a token, every request but `/health` needs `Authorization: Bearer TOKEN`
/// (401 otherwise); without a token (or `insecure_api`), a non-loopback API does not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_needs_its_bearer_token() {
    const TOKEN: &str = "s3cret-token-0123456789";
    let h = api_node(Duration::from_secs(10), Some(TOKEN)).await;
    let api = h.api.unwrap();
    let (answer, _) =
        api_exchange(api, b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("www-authenticate: bearer"), "{answer}");
    assert!(answer.contains("Authorization: Bearer TOKEN"), "{answer}");
    let (answer, _) = api_exchange(
        api,
        b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret-token-012345678\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 401") && answer.contains("wrong bearer token"), "{answer}");
    let (answer, _) = api_exchange(
        api,
        b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret-token-0123456789\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The scheme name in any case (RFC 9110 §11.1).
    let (answer, _) = api_exchange(
        api,
        b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nauthorization: bearer s3cret-token-0123456789\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (answer, _) =
        api_exchange(api, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut open =
        NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), vec![(2, "127.0.0.1:9".into())], "central");
    open.api = Some("0.0.0.0:0".parse().unwrap());
    let err = ringleader_net::start(open.clone()).await.err().expect("refused");
    assert!(err.to_string().contains("is not a loopback address"), "{err}");
    open.insecure_api = true;
    let h = ringleader_net::start(open).await.expect("--insecure serves it");
    h.shutdown.cancel();
}

/// `/health` answers while the process serves; `/ready` says why a node cannot do its job (a
/// mutual-exclusion node whose peer is unreachable) with 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_says_why_not() {
    let h = api_node(Duration::from_secs(10), None).await;
    let api = h.api.unwrap();
    let (answer, _) =
        api_exchange(api, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains(r#""status":"alive""#), "{answer}");
    let (answer, _) =
        api_exchange(api, b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains(r#""ready":false"#) && answer.contains("not connected to peer(s) 2"), "{answer}");
}

/// A node whose API takes at most `max` connections at once and closes a connection whose
/// response stays unwritable for `stall`.
async fn capped_api_node(max: usize, stall: Duration) -> NodeHandle {
    let mut cfg =
        NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), vec![(2, "127.0.0.1:9".into())], "central");
    cfg.api = Some("127.0.0.1:0".parse().unwrap());
    cfg.api_max_connections = max;
    cfg.api_write_stall_timeout = stall;
    ringleader_net::start(cfg).await.expect("node starts")
}

/// Open API connections (the `api_connections` gauge).
fn api_open(h: &NodeHandle) -> u64 {
    h.shared.api_connections.load(Ordering::Relaxed)
}

/// Waits (bounded) until the `api_connections` gauge is `want`.
async fn wait_api_open(h: &NodeHandle, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while api_open(h) != want {
        assert!(Instant::now() < deadline, "api_connections stayed at {} (want {want})", api_open(h));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads one keep-alive answer (head and `content-length` bytes of body) from `s`.
fn read_answer(s: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .expect("content-length");
            if body.len() >= len {
                return text;
            }
        }
        let n = s.read(&mut buf).expect("an answer within the read timeout");
        assert!(n > 0, "the node closed the connection: {text}");
        seen.extend_from_slice(&buf[..n]);
    }
}

/// Issue 13 §5: the API holds at most `api_max_connections` connections. One more is answered
/// 503 (and counted); once connections close, the API answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_connections_beyond_the_cap_are_refused_until_some_close() {
    let h = capped_api_node(4, Duration::from_secs(30)).await;
    let api = h.api.unwrap();
    // Four keep-alive connections, each answered once and left open.
    let held = tokio::task::spawn_blocking(move || {
        (0..4)
            .map(|_| {
                let mut s = TcpStream::connect(api).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
                let answer = read_answer(&mut s);
                assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
                s
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    wait_api_open(&h, 4).await;
    // The fifth and sixth are refused with a clear answer.
    for refused in 1..=2 {
        let (answer, _) =
            api_exchange(api, b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("too many open connections"), "{answer}");
        assert_eq!(counter(&h, "api_connections_over_limit"), refused);
    }
    assert_eq!(api_open(&h), 4);
    // Closing the held connections frees their places.
    drop(held);
    wait_api_open(&h, 0).await;
    let (answer, _) =
        api_exchange(api, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer
            .lines()
            .any(|l| l.starts_with("ringleader_api_connections_over_limit_total{") && l.ends_with(" 2")),
        "{answer}"
    );
    assert!(answer.contains("# TYPE ringleader_api_connections gauge"), "{answer}");
    assert_eq!(api_status(&h).await["id"], 1, "the node serves again");
}

/// Issue 13 §5: an SSE subscriber that stops reading cannot pin the node's memory: once its
/// events have filled the socket buffers and the response stays unwritable for the write-stall
/// timeout, the node closes the connection (`api_write_stalls`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_subscriber_that_stops_reading_is_disconnected() {
    use ringleader_net::shared::NodeEventKind;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let h = capped_api_node(16, Duration::from_millis(300)).await;
    // A subscriber with a small receive buffer that never reads.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut client = socket.connect(h.api.unwrap()).await.unwrap();
    client.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while h.shared.events.receiver_count() == 0 {
        assert!(Instant::now() < deadline, "the subscriber never subscribed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Publish events until the node gives up on the subscriber.
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    let mut published = 0u64;
    while counter(&h, "api_write_stalls") == 0 {
        assert!(Instant::now() < deadline, "no stall detected after {published} events");
        for _ in 0..64 {
            published += 1;
            h.shared.publish(
                published,
                NodeEventKind::LockLost { fencing: published, ttl: Duration::from_secs(1) },
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    println!("write stall detected after {published} events, {:?}", started.elapsed());
    wait_api_open(&h, 0).await;
    // The client finds the stream ended (after what was buffered), within a bounded wait.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the connection is closed: the read ends");
    assert_eq!(counter(&h, "api_write_stalls"), 1);
    assert_eq!(api_status(&h).await["id"], 1, "the node keeps serving");
}

/// Sends one request with `headers` (each ending in `\r\n`) and a small body to the API; returns
/// the answer.
async fn api_request(addr: SocketAddr, method: &str, path: &str, headers: &str) -> String {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{headers}Content-Length: 2\r\nConnection: close\r\n\r\n{{}}",
        addr.port()
    );
    let bytes: &'static [u8] = Box::leak(request.into_bytes().into_boxed_slice());
    api_exchange(addr, bytes).await.0
}

/// Issue 31 §4 (CSRF): a web page the operator opens cannot take the lock. What a page can make
/// a browser send to the node without a preflight — a POST with a form's content type, from
/// its own origin — is refused: 403 with a foreign `Origin`, 415 without JSON or the client
/// header (a browser that sent no `Origin`, or a page of the node's own origin posting a form).
/// The node's real clients (JSON, or `X-Ringleader`) take and release the lock as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_cannot_make_a_browser_take_the_lock() {
    let mut cfg = NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), vec![], "central");
    cfg.api = Some("127.0.0.1:0".parse().unwrap());
    let h = ringleader_net::start(cfg).await.expect("node starts");
    let api = h.api.unwrap();
    let own = format!("Origin: http://127.0.0.1:{}\r\n", api.port());
    let attacks = [
        ("Origin: http://evil.example\r\nContent-Type: text/plain\r\n".to_string(), "403"),
        ("Origin: http://evil.example\r\nContent-Type: application/json\r\n".to_string(), "403"),
        ("Content-Type: text/plain\r\n".to_string(), "415"),
        ("Content-Type: application/x-www-form-urlencoded\r\n".to_string(), "415"),
        (format!("{own}Content-Type: multipart/form-data; boundary=x\r\n"), "415"),
        (String::new(), "415"),
    ];
    for (headers, code) in &attacks {
        for path in ["/lock?timeout=1s&ttl=3600s", "/election"] {
            let answer = api_request(api, "POST", path, headers).await;
            assert!(answer.starts_with(&format!("HTTP/1.1 {code}")), "{headers:?} {path}: {answer}");
        }
    }
    assert_eq!(counter(&h, "lock_grants"), 0, "no attack took the lock");
    // The client of the node: JSON, or the client header.
    let answer = api_request(api, "POST", "/lock?timeout=5s", "Content-Type: application/json\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let handle = body["handle"].as_str().unwrap().to_string();
    let release = format!("/lock/{handle}");
    let answer = api_request(api, "DELETE", &release, "Content-Type: text/plain\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 415"), "a form cannot release it either: {answer}");
    let answer = api_request(api, "DELETE", &release, "X-Ringleader: 1\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(counter(&h, "lock_grants"), 1);
}

/// A node (id 1, central, with an API) with the cluster secret `secret` and `peers`.
async fn secret_node(secret: &ringleader_net::auth::Secret, peers: Vec<(u64, String)>) -> NodeHandle {
    let mut cfg = NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), peers, "central");
    cfg.api = Some("127.0.0.1:0".parse().unwrap());
    cfg.secret = Some(secret.clone());
    ringleader_net::start(cfg).await.expect("node starts")
}

/// Issue 31 §4: before it has proved anything, a connection may announce no frame larger than
/// a hello needs. One announcing 4 KiB (far below the 64 KiB of a proven peer's frame) is cut
/// off at once, without waiting for the bytes (nor reserving room for them); the handshake
/// timeout is not what closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_announcing_more_than_a_hello_is_cut_off_at_once() {
    let secret = ringleader_net::auth::Secret::generate();
    let h = secret_node(&secret, vec![(2, "127.0.0.1:9".into())]).await;
    let addr = h.listen;
    let t0 = Instant::now();
    let n = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(&4096u32.to_be_bytes()).unwrap();
        s.write_all(&[0; 16]).unwrap();
        let mut buf = [0u8; 16];
        s.read(&mut buf).unwrap_or(0)
    })
    .await
    .unwrap();
    let took = t0.elapsed();
    assert_eq!(n, 0, "the node closed the connection");
    assert!(
        took < ringleader_transport::peer::HANDSHAKE_TIMEOUT / 2,
        "closed after {took:?}: it waited for the frame instead of refusing its length"
    );
    wait_counter(&h, "frame_errors", 1).await;
}

/// Issue 31 §4: a peer in the middle of its handshake (hello sent, challenge received, proof
/// on its way over a slow network) is not closed to make room for strangers that said nothing:
/// more than a whole handshake pool of them arrive meanwhile, and its proof still lets it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_strangers_make_room_for_each_other_not_for_a_peer_in_its_handshake() {
    use ringleader_net::auth;
    use ringleader_net::wire::{Challenge, Proof};
    use ringleader_transport::peer::MAX_HANDSHAKES;
    let secret = auth::Secret::generate();
    let h = secret_node(&secret, vec![(2, "127.0.0.1:9".into())]).await;
    let addr = h.listen;
    let secret2 = secret.clone();
    let (peer, strangers) = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let nonce = auth::nonce();
        s.write_all(&frame(&wire::encode(&Hello::new("central", 2).with_nonce(nonce)))).unwrap();
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let mut challenge = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut challenge).unwrap();
        let challenge: Challenge = wire::decode(&challenge).unwrap();
        // Strangers arrive while the proof is on its way.
        let strangers: Vec<TcpStream> =
            (0..MAX_HANDSHAKES + 16).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let ids = auth::ids(2, 1);
        let t = auth::transcript(&nonce, &challenge.nonce, &ids, "central");
        (s, strangers, Proof { mac: secret2.mac(auth::DIALLER, &t) })
    })
    .await
    .map(|(mut s, strangers, proof)| {
        // The proof is sent once the node has made room for the last strangers.
        (
            move || {
                let _ = s.write_all(&frame(&wire::encode(&proof)));
                s
            },
            strangers,
        )
    })
    .unwrap();
    wait_counter(&h, "handshakes_evicted", 16).await;
    let peer = tokio::task::spawn_blocking(peer).await.unwrap();
    wait_counter(&h, "connections_accepted", 1).await;
    assert_eq!(counter(&h, "auth_failures"), 0);
    drop((peer, strangers));
}

/// Issue 31 §4: a flood of strangers — silent connections and hellos that never prove
/// themselves — neither closes a proven peer's connection nor keeps a peer that restarts from
/// getting back in: node 2 proves itself, the flood goes on, node 2 restarts (a new connection,
/// a new handshake) and is connected again within a bounded wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_strangers_cannot_keep_a_restarted_peer_out() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let secret = ringleader_net::auth::Secret::generate();
    // Node 2 is started first on a port of its own; node 1 knows it there.
    let start2 = |peer1: String| {
        let mut cfg = NodeConfig::new(2, "127.0.0.1:0".parse().unwrap(), vec![(1, peer1)], "central");
        cfg.secret = Some(secret.clone());
        ringleader_net::start(cfg)
    };
    let one = secret_node(&secret, vec![(2, "127.0.0.1:9".into())]).await;
    let addr = one.listen;
    let two = start2(addr.to_string()).await.expect("node 2 starts");
    wait_counter(&one, "connections_accepted", 1).await;
    // The flood: two threads opening connections to node 1 as fast as they can, half silent,
    // half saying a valid hello as id 2 and nothing more, each held until the flood ends.
    let stop = Arc::new(AtomicBool::new(false));
    let flood: Vec<_> = (0..2)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut held = std::collections::VecDeque::new();
                let mut opened = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut s) = TcpStream::connect(addr) else { continue };
                    if (opened + t).is_multiple_of(2) {
                        let _ = s.write_all(&hello(wire::PROTOCOL_VERSION, "central", 2));
                    }
                    opened += 1;
                    held.push_back(s);
                    if held.len() > 200 {
                        held.pop_front();
                    }
                }
                opened
            })
        })
        .collect();
    wait_counter(&one, "handshakes_evicted", 500).await;
    let accepted = counter(&one, "connections_accepted");
    assert_eq!(accepted, 1, "only node 2 got through");
    // Node 2 restarts: its old connection ends, its new one must get through the flood.
    two.shutdown.cancel();
    let two = start2(addr.to_string()).await.expect("node 2 restarts");
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(15);
    while counter(&one, "connections_accepted") < 2 {
        assert!(
            Instant::now() < deadline,
            "the restarted node 2 did not get back in within 15 s of flood ({} evicted)",
            counter(&one, "handshakes_evicted")
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    let opened: u64 = flood.into_iter().map(|t| t.join().unwrap()).sum();
    println!("node 2 got back in after {took:?} of a flood of {opened} connections");
    assert_eq!(counter(&one, "connections_over_limit"), 0, "no proven peer was refused");
    two.shutdown.cancel();
}
