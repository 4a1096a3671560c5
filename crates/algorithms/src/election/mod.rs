//! Leader election: choosing one coordinator among processes with unique, ordered ids.
//!
//! Properties every election is checked for: agreement, validity, uniqueness, termination
//! (see `docs/ELECTIONS.md`).

pub mod bully;
pub mod chang_roberts;
pub mod hirschberg_sinclair;
pub mod majority;
pub mod ring;
pub mod superpeer_dht;
pub mod superpeer_geometric;
pub mod watch;
pub mod yoyo;
