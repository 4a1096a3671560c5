//! Fencing tokens that survive a change of coordinator or token: an epoch and a counter.
//!
//! A mutual-exclusion algorithm whose grants can outlive their grantor (a central coordinator
//! that is replaced, a token that is regenerated) numbers each entry with an epoch — which
//! coordinator or which token — and a counter within it. Tokens compare as (epoch, counter),
//! so every entry of a later epoch is above every entry of an earlier one.
//!
//! On the wire, in [`crate::Event::Entered`] and in traces the token travels as one number,
//! [`FencingToken::packed`]: the epoch in the high 32 bits, the counter in the low 32 bits. The
//! packed numbers order exactly as the tokens do, so a fenced resource or a checker that only
//! compares numbers needs no decoding.

use std::fmt;

/// A fencing token: `counter` within `epoch`, ordered as (epoch, counter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken {
    /// Which coordinator or token granted the entry (the packed number's high 32 bits).
    pub epoch: u32,
    /// The entry's number within its epoch (the packed number's low 32 bits).
    pub counter: u32,
}

impl FencingToken {
    /// The token `counter` of `epoch`.
    pub const fn new(epoch: u32, counter: u32) -> Self {
        FencingToken { epoch, counter }
    }

    /// The token as one number: `epoch · 2³² + counter`.
    pub const fn packed(self) -> u64 {
        ((self.epoch as u64) << 32) | self.counter as u64
    }

    /// The token a packed number carries.
    pub const fn from_packed(packed: u64) -> Self {
        FencingToken { epoch: (packed >> 32) as u32, counter: packed as u32 }
    }
}

impl From<FencingToken> for u64 {
    fn from(token: FencingToken) -> u64 {
        token.packed()
    }
}

impl From<u64> for FencingToken {
    fn from(packed: u64) -> Self {
        FencingToken::from_packed(packed)
    }
}

impl fmt::Display for FencingToken {
    /// `(epoch 1, counter 3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(epoch {}, counter {})", self.epoch, self.counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_and_keeps_the_order() {
        let tokens = [(0, 0), (0, 1), (0, u32::MAX), (1, 0), (1, 1), (7, 3), (u32::MAX, u32::MAX)];
        for (e, c) in tokens {
            let t = FencingToken::new(e, c);
            assert_eq!(FencingToken::from_packed(t.packed()), t);
            assert_eq!(u64::from(t), (u64::from(e) << 32) | u64::from(c));
        }
        for w in tokens.windows(2) {
            let (a, b) = (FencingToken::new(w[0].0, w[0].1), FencingToken::new(w[1].0, w[1].1));
            assert!(a < b && a.packed() < b.packed());
        }
        assert_eq!(FencingToken::from((1 << 32) | 3).to_string(), "(epoch 1, counter 3)");
    }
}
