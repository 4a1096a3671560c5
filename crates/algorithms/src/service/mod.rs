//! The lock service: leases, named locks and elections kept as one replicated state machine.
//! Every replica applies the same committed commands in the same order to a pure,
//! deterministic [`state::StateMachine`] and so reaches the same state and the same notices;
//! the consensus layer that orders the commands lives elsewhere and knows nothing of locks.

pub mod state;
