//! The wire protocol between peers: length-delimited postcard frames behind a versioned handshake.
//!
//! ```text
//!   frame   = length (u32, big-endian) · payload (postcard), length ≤ max frame size
//!   first   = Hello { magic: "RLDR", version: PROTOCOL_VERSION, algorithm, sender, nonce }
//!   with a cluster secret (see [`crate::auth`]):
//!             ◀ Challenge { nonce, mac }  (the only frame an acceptor ever writes)
//!             Proof { mac }
//!   then    = payload                 (one per message, of the protocol's own type)
//!           | empty frame (length 0)  (keep-alive on an idle connection)
//! ```
//!
//! The payload is the user's: a textbook node sends its driver's envelopes
//! (`ringleader_net::wire::Envelope`), a service node raft-rs's messages. The hello's
//! `algorithm` names the protocol (the textbook algorithm, or the service and its cluster id),
//! so that peers speaking different payloads refuse each other before any payload is read.
//!
//! A connection is one-way: the dialling node sends, the accepting node receives. The accepting
//! side checks the hello (magic, version, protocol, that the sender is a known peer) and closes
//! the connection on any mismatch, on a frame it cannot decode, and on a frame larger than the
//! maximum; every such case is counted (see [`crate::counters::Counted`]).

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::codec::LengthDelimitedCodec;

/// The four bytes every handshake starts with.
pub const MAGIC: [u8; 4] = *b"RLDR";

/// The protocol version this build speaks; a peer with another version is refused. (3: empty
/// keep-alive frames.)
pub const PROTOCOL_VERSION: u16 = 3;

/// Default maximum frame size (bytes of payload).
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024;

/// The first frame on every connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Must equal [`MAGIC`].
    pub magic: [u8; 4],
    /// Must equal [`PROTOCOL_VERSION`].
    pub version: u16,
    /// The protocol the sender speaks (a textbook node: its algorithm); must equal ours.
    pub algorithm: String,
    /// The sender's uid; must be one of our peers (and, with a secret, proved).
    pub sender: u64,
    /// The dialler's challenge nonce (see [`crate::auth`]).
    pub nonce: [u8; 32],
}

impl Hello {
    /// Our hello for `algorithm` from `sender` (nonce zero; see [`Hello::with_nonce`]).
    pub fn new(algorithm: &str, sender: u64) -> Hello {
        Hello {
            magic: MAGIC,
            version: PROTOCOL_VERSION,
            algorithm: algorithm.to_string(),
            sender,
            nonce: [0; 32],
        }
    }

    /// The same hello carrying `nonce`.
    pub fn with_nonce(self, nonce: [u8; 32]) -> Hello {
        Hello { nonce, ..self }
    }
}

/// The acceptor's answer to a hello when the cluster has a secret: its own nonce, and its proof
/// that it holds the secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    /// The acceptor's nonce.
    pub nonce: [u8; 32],
    /// HMAC of the transcript under the acceptor's label.
    pub mac: [u8; 32],
}

/// The dialler's proof that it holds the secret and is the id its hello claimed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// HMAC of the transcript under the dialler's label.
    pub mac: [u8; 32],
}

/// Why a frame or a handshake was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The payload is not valid postcard for the expected type (garbage, or truncated).
    #[error("undecodable frame: {0}")]
    Decode(String),
    /// The hello's magic bytes are wrong (not a ringleader peer).
    #[error("bad magic {0:?} (expected \"RLDR\")")]
    Magic([u8; 4]),
    /// The peer speaks another protocol version.
    #[error("protocol version {got}, this node speaks {PROTOCOL_VERSION}")]
    Version {
        /// The peer's version.
        got: u16,
    },
    /// The peer speaks another protocol (runs another algorithm).
    #[error("peer runs algorithm {got:?}, this node runs {ours:?}")]
    Algorithm {
        /// The peer's algorithm.
        got: String,
        /// Ours.
        ours: String,
    },
    /// The sender id is not in our membership.
    #[error("unknown sender id {0}")]
    UnknownSender(u64),
    /// A frame's announced length exceeds the maximum.
    #[error("frame larger than the maximum of {0} bytes")]
    TooLarge(usize),
    /// The connection ended in the middle of a frame.
    #[error("connection closed inside a frame")]
    Truncated,
    /// The peer did not prove that it holds the cluster secret for the id it claimed.
    #[error("peer claiming id {0} did not prove it holds the cluster secret")]
    Unauthenticated(u64),
    /// Every slot for proven peers' connections is taken (by other peers).
    #[error("{0} peer connections are open already, the most this node takes")]
    OverLimit(usize),
    /// The TLS handshake failed (no certificate, one the peer CA did not sign, another name,
    /// or not TLS at all).
    #[error("TLS handshake refused: {0}")]
    Tls(String),
}

/// The codec for frames of at most `max_frame` bytes.
pub fn codec(max_frame: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder().length_field_length(4).max_frame_length(max_frame).new_codec()
}

/// Encodes a value as one frame payload.
pub fn encode<T: Serialize>(value: &T) -> Bytes {
    Bytes::from(postcard::to_stdvec(value).expect("postcard encodes every ringleader message"))
}

/// Decodes one payload; trailing bytes are an error (a frame is exactly one value).
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    match postcard::take_from_bytes::<T>(payload) {
        Ok((v, [])) => Ok(v),
        Ok((_, rest)) => Err(FrameError::Decode(format!("{} trailing bytes", rest.len()))),
        Err(e) => Err(FrameError::Decode(e.to_string())),
    }
}

/// Decodes and checks a hello against our protocol (algorithm) and membership.
pub fn check_hello(payload: &[u8], algorithm: &str, members: &[u64]) -> Result<Hello, FrameError> {
    check_hello_with(payload, algorithm, |u| members.contains(&u))
}

/// [`check_hello`] with the members given as a predicate on the sender's id.
pub fn check_hello_with(
    payload: &[u8],
    algorithm: &str,
    is_member: impl Fn(u64) -> bool,
) -> Result<Hello, FrameError> {
    let hello: Hello = decode(payload)?;
    if hello.magic != MAGIC {
        return Err(FrameError::Magic(hello.magic));
    }
    if hello.version != PROTOCOL_VERSION {
        return Err(FrameError::Version { got: hello.version });
    }
    if hello.algorithm != algorithm {
        return Err(FrameError::Algorithm { got: hello.algorithm, ours: algorithm.to_string() });
    }
    if !is_member(hello.sender) {
        return Err(FrameError::UnknownSender(hello.sender));
    }
    Ok(hello)
}

/// Classifies an error of the length-delimited codec.
pub fn codec_error(e: &std::io::Error, max_frame: usize) -> FrameError {
    if e.get_ref().is_some_and(|inner| inner.is::<tokio_util::codec::LengthDelimitedCodecError>()) {
        FrameError::TooLarge(max_frame)
    } else if e.kind() == std::io::ErrorKind::UnexpectedEof || e.to_string().contains("bytes remaining") {
        FrameError::Truncated
    } else {
        FrameError::Decode(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use proptest::prelude::*;
    use tokio_util::codec::Decoder;

    #[test]
    fn hello_round_trips_and_is_checked() {
        let h = Hello::new("central", 3);
        let bytes = encode(&h);
        assert_eq!(check_hello(&bytes, "central", &[1, 2, 3]), Ok(h.clone()));
        assert_eq!(
            check_hello(&bytes, "bully", &[1, 2, 3]).unwrap_err().to_string(),
            "peer runs algorithm \"central\", this node runs \"bully\""
        );
        assert_eq!(check_hello(&bytes, "central", &[1, 2]), Err(FrameError::UnknownSender(3)));
        let old = Hello { version: 0, ..h.clone() };
        assert_eq!(check_hello(&encode(&old), "central", &[3]), Err(FrameError::Version { got: 0 }));
        let alien = Hello { magic: *b"HTTP", ..h };
        assert_eq!(check_hello(&encode(&alien), "central", &[3]), Err(FrameError::Magic(*b"HTTP")));
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = encode(&7u64).to_vec();
        bytes.push(0);
        assert!(matches!(decode::<u64>(&bytes), Err(FrameError::Decode(_))));
    }

    #[test]
    fn oversized_frames_are_refused_by_the_codec() {
        let mut c = codec(16);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 17][..]);
        let err = c.decode(&mut buf).unwrap_err();
        assert_eq!(codec_error(&err, 16), FrameError::TooLarge(16));
    }

    proptest! {
        /// Arbitrary bytes through the frame codec and the handshake's decoders never panic.
        #[test]
        fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut c = codec(256);
            let mut buf = BytesMut::from(&bytes[..]);
            while let Ok(Some(frame)) = c.decode(&mut buf) {
                let _ = check_hello(&frame, "central", &[1, 2, 3]);
                let _ = decode::<Proof>(&frame);
            }
            let _ = c.decode_eof(&mut buf);
            let _ = check_hello(&bytes, "central", &[1]);
            let _ = decode::<Challenge>(&bytes);
        }
    }
}
