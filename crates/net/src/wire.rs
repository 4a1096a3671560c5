//! What a textbook node sends its peers: one [`Envelope`] per algorithm message, in the frames
//! of the peer transport ([`ringleader_transport::wire`], re-exported here: the handshake, the
//! codec, [`encode`] and [`decode`]).
//!
//! ```text
//!   after the transport's handshake:
//!   frame = Envelope { msg_id, lamport, vector, msg }   (one per algorithm message)
//!         | empty frame (length 0)                      (keep-alive on an idle connection)
//! ```
//!
//! The envelope carries the driver's bookkeeping: the message's id, which links its send record
//! to its delivery record in the traces, and the sender's Lamport and vector clocks at the send
//! ([`ringleader_core::stamp`]), which the receiver merges into its own.

use ringleader_core::stamp::Stamp;
use serde::{Deserialize, Serialize};

pub use ringleader_transport::wire::*;

/// One algorithm message with the driver's bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope<M> {
    /// Unique per sender: links a send record to its delivery record in the traces. It is
    /// `id << 40 | n` (the low 24 bits of the sender's id, then its message count), and a node
    /// refuses an envelope whose id is not the one its connection proved.
    pub msg_id: u64,
    /// The sender's Lamport clock at the send.
    pub lamport: u64,
    /// The sender's vector clock at the send.
    pub vector: Vec<u64>,
    /// The algorithm's message.
    pub msg: M,
}

impl<M> Envelope<M> {
    /// The envelope of message `msg_id` sent with the clocks `stamp` (a stamp without a vector
    /// travels with an empty one).
    pub fn stamped(msg_id: u64, stamp: Stamp, msg: M) -> Envelope<M> {
        Envelope { msg_id, lamport: stamp.lamport, vector: stamp.vector.unwrap_or_default(), msg }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use proptest::prelude::*;
    use tokio_util::codec::Decoder;

    type CentralEnvelope = Envelope<ringleader_algorithms::mutex::central::Msg>;

    proptest! {
        /// Arbitrary bytes through the frame codec and the envelope decoder never panic.
        #[test]
        fn envelope_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut c = codec(256);
            let mut buf = BytesMut::from(&bytes[..]);
            while let Ok(Some(frame)) = c.decode(&mut buf) {
                let _ = decode::<CentralEnvelope>(&frame);
            }
            let _ = c.decode_eof(&mut buf);
            let _ = decode::<CentralEnvelope>(&bytes);
        }
    }
}
