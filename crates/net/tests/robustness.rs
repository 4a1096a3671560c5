//! A node under hostile input: every bad connection is logged, counted and closed, and the
//! node keeps serving. Real TCP on loopback, bounded waits, no sleeps.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ringleader_net::wire::{self, Envelope, Hello};
use ringleader_net::{NodeConfig, NodeHandle};

async fn node(max_connections: usize) -> NodeHandle {
    let mut cfg =
        NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), vec![(2, "127.0.0.1:9".into())], "central");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_flood_is_refused_and_the_node_keeps_serving() {
    let limit = 8;
    let h = node(limit).await;
    let addr = h.listen;
    let flood = tokio::task::spawn_blocking(move || {
        (0..limit + 40).map(|_| TcpStream::connect(addr).unwrap()).collect::<Vec<_>>()
    })
    .await
    .unwrap();
    wait_counter(&h, "connections_over_limit", 40).await;
    assert_eq!(api_status(&h).await["counters"]["connections_over_limit"].as_u64().unwrap(), 40);
    drop(flood);
    // The silent connections free their slots when they close; a real peer gets in again.
    wait_counter(&h, "frame_errors", limit as u64).await;
    let s = {
        let bytes = hello(wire::PROTOCOL_VERSION, "central", 2);
        tokio::task::spawn_blocking(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&bytes).unwrap();
            s
        })
        .await
        .unwrap()
    };
    wait_counter(&h, "connections_accepted", 1).await;
    assert_eq!(h.shared.counters.connections_over_limit.load(Ordering::Relaxed), 40);
    drop(s);
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
