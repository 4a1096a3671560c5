//! The textbook message counts, as functions of N and the workload.
//!
//! Each function returns a [`Count`]: the formula's total over the operations it is given, and
//! the counts it states for individual message kinds. `ringleader table` compares runs with
//! them, and so do the exact-count tests of this crate. Sources: Garcia-Molina (1982) for the
//! bully election; Chang and Roberts (1979) and the ring election of Coulouris et al.,
//! *Distributed Systems* (5th ed., §15.3); Hirschberg and Sinclair (1980); Santoro, *Design and
//! Analysis of Distributed Algorithms* (2007, §3.8) for YoYo; Lamport (1978), Ricart and
//! Agrawala (1981), Roucairol and Carvalho (1983), Maekawa (1985), Suzuki and Kasami (1985),
//! Raymond (1989) for mutual exclusion; Cristian (1989), Gusella and Zatti (1989), Mills (1991)
//! for clocks; Chandy, Misra and Haas (1983) for deadlock detection.

/// A textbook message count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Count {
    /// The formula's total.
    pub total: u64,
    /// The counts the formula states for single kinds (a kind it does not name is not listed).
    pub kinds: Vec<(&'static str, u64)>,
}

impl Count {
    /// A total with no per-kind counts.
    pub fn total(total: u64) -> Count {
        Count { total, kinds: Vec::new() }
    }

    fn of(kinds: &[(&'static str, u64)]) -> Count {
        Count { total: kinds.iter().map(|k| k.1).sum(), kinds: kinds.to_vec() }
    }

    /// The count stated for `kind`, if the formula names it.
    pub fn kind(&self, kind: &str) -> Option<u64> {
        self.kinds.iter().find(|k| k.0 == kind).map(|k| k.1)
    }
}

/// ⌈log2 n⌉ (0 for n ≤ 1).
pub fn ceil_log2(n: u64) -> u64 {
    u64::from(n.max(1).next_power_of_two().trailing_zeros())
}

/// Chang-Roberts, worst case (ids descending along the ring, all initiate): N(N+1)/2
/// ELECTION, N ELECTED.
pub fn chang_roberts_worst(n: u64) -> Count {
    Count::of(&[("election", n * (n + 1) / 2), ("elected", n)])
}

/// Chang-Roberts when the maximum's ELECTION and one other run the ring (best case: ids
/// ascending, all initiate; or one initiator whose predecessor holds the maximum): 2N−1
/// ELECTION, N ELECTED.
pub fn chang_roberts_best(n: u64) -> Count {
    Count::of(&[("election", 2 * n - 1), ("elected", n)])
}

/// Chang-Roberts with one initiator holding the maximum: N ELECTION, N ELECTED.
pub fn chang_roberts_from_max(n: u64) -> Count {
    Count::of(&[("election", n), ("elected", n)])
}

/// Bully, worst case (the highest id crashed, the lowest detects): N²−N−1.
pub fn bully_worst(n: u64) -> Count {
    Count::of(&[("election", n * (n - 1) / 2), ("answer", (n - 1) * (n - 2) / 2), ("coordinator", n - 2)])
}

/// Bully, best case (the highest id crashed, the next highest detects): N−1.
pub fn bully_best(n: u64) -> Count {
    Count::of(&[("election", 1), ("answer", 0), ("coordinator", n - 2)])
}

/// The ring election with `initiators` concurrent elections on a ring of `live` processes and
/// `dead` crashed ones (each skipped once per message): k(L+d) ELECTION, kL COORDINATOR, in
/// all k(2L+d).
pub fn ring(live: u64, dead: u64, initiators: u64) -> Count {
    Count::of(&[("election", initiators * (live + dead)), ("coordinator", initiators * live)])
}

/// Majority voting, uncontested: N−1 REQUEST_VOTE, N−1 VOTE.
pub fn majority(n: u64) -> Count {
    Count::of(&[("request_vote", n - 1), ("vote", n - 1)])
}

/// Hirschberg-Sinclair's bound, 8N(1+⌈log2 N⌉) + N, with N ELECTED.
pub fn hirschberg_sinclair_bound(n: u64) -> Count {
    Count { total: 8 * n * (1 + ceil_log2(n)) + n, kinds: vec![("elected", n)] }
}

/// YoYo's edge count in the table's graph: 2N, or the complete graph when that is fewer.
pub fn yoyo_edges(n: u64) -> u64 {
    (2 * n).min(n * (n - 1) / 2)
}

/// YoYo's bound on a graph of `n` nodes and `m` edges: 2m SETUP, at most 2m(⌈log2 N⌉+1) in
/// the YoYo phases, 2m−N+1 COORDINATOR.
pub fn yoyo_bound(n: u64, m: u64) -> Count {
    Count {
        total: 2 * m + 2 * m * (ceil_log2(n) + 1) + (2 * m - n + 1),
        kinds: vec![("setup", 2 * m), ("coordinator", 2 * m - n + 1)],
    }
}

/// Chord super-peer election's bound for `normal` joining nodes with `bits`-bit ids: at most
/// `bits` LOOKUP hops, one FOUND and one JOIN each.
pub fn superpeer_dht_bound(bits: u64, normal: u64) -> Count {
    Count { total: (bits + 2) * normal, kinds: vec![("join", normal)] }
}

/// Gossip super-peer election's bound over `rounds` rounds: `fanout` pushes per node and
/// round, plus one GOSSIP answering each of the `pulls` PULLs.
pub fn superpeer_gossip_bound(fanout: u64, n: u64, rounds: u64, pulls: u64) -> Count {
    Count::total(fanout * n * rounds + pulls)
}

/// The central coordinator over `entries` entries: REQUEST, GRANT, RELEASE each.
pub fn central(entries: u64) -> Count {
    Count::of(&[("request", entries), ("grant", entries), ("release", entries)])
}

/// Token ring under `sequential` (requesters 1, 2, … in turn; the token starts at 0) with
/// the parking rule: a requester `j` with the token parked at `p ≠ j` sends one REQUEST, the
/// token travels `d(p, j)` hops to it and then an idle lap of `N` hops back to `j`, where it
/// parks; with the token parked at `j` itself the entry costs only the lap.
pub fn token_ring(n: u64, entries: u64) -> Count {
    let (mut total, mut parked) = (0, 0);
    for e in 0..entries {
        let j = 1 + e % (n - 1);
        if j != parked {
            total += 1 + (j + n - parked) % n;
        }
        total += n;
        parked = j;
    }
    Count::total(total)
}

/// Quorum voting with `coordinators` coordinators, requesters outside them: REQUEST, GRANT
/// and RELEASE to each coordinator per entry.
pub fn quorum(coordinators: u64, entries: u64) -> Count {
    let k = coordinators * entries;
    Count::of(&[("request", k), ("grant", k), ("release", k)])
}

/// Quorum's coordinators in the table's row: a majority-sized set, ⌊N/2⌋ + 1.
pub fn quorum_coordinators(n: u64) -> u64 {
    n / 2 + 1
}

/// Lamport's mutual exclusion: 3(N−1) per entry.
pub fn lamport(n: u64, entries: u64) -> Count {
    let k = (n - 1) * entries;
    Count::of(&[("request", k), ("reply", k), ("release", k)])
}

/// Ricart-Agrawala: 2(N−1) per entry.
pub fn ricart_agrawala(n: u64, entries: u64) -> Count {
    let k = (n - 1) * entries;
    Count::of(&[("request", k), ("reply", k)])
}

/// Roucairol-Carvalho's bound: Ricart-Agrawala's 2(N−1) per entry, less while permissions are
/// held.
pub fn roucairol_carvalho_bound(n: u64, entries: u64) -> Count {
    Count::total(2 * (n - 1) * entries)
}

/// Maekawa on a √N × √N grid: K = 2√N − 1 including oneself, 3(K−1) per entry without
/// contention (no INQUIRE, YIELD or FAILED).
pub fn maekawa(n: u64, entries: u64) -> Count {
    let k = (2 * n.isqrt() - 1 - 1) * entries;
    Count::of(&[("request", k), ("reply", k), ("release", k), ("inquire", 0), ("yield", 0), ("failed", 0)])
}

/// Suzuki-Kasami: N−1 REQUEST and one TOKEN per entry.
pub fn suzuki_kasami(n: u64, entries: u64) -> Count {
    Count::of(&[("request", (n - 1) * entries), ("token", entries)])
}

/// Raymond under `sequential` on its balanced binary tree (parent of i is (i−1)/2, the token
/// at the root): an entry by requester j costs 2·d(previous holder, j) — d REQUESTs along the
/// tree path to the holder, d PRIVILEGE hops back.
pub fn raymond(n: u64, entries: u64) -> Count {
    let depth = |mut i: u64| {
        let mut d = 0;
        while i > 0 {
            i = (i - 1) / 2;
            d += 1;
        }
        d
    };
    let distance = |mut a: u64, mut b: u64| {
        let mut d = 0;
        while a != b {
            if depth(a) >= depth(b) {
                a = (a - 1) / 2;
            } else {
                b = (b - 1) / 2;
            }
            d += 1;
        }
        d
    };
    let (mut total, mut holder) = (0, 0);
    for e in 0..entries {
        let j = 1 + e % (n - 1);
        total += 2 * distance(holder, j);
        holder = j;
    }
    Count::total(total)
}

/// Cristian's and NTP's exchange: one REQUEST and one REPLY per synchronisation.
pub fn request_reply(syncs: u64) -> Count {
    Count::of(&[("request", syncs), ("reply", syncs)])
}

/// Berkeley: POLL, TIME and ADJUST to or from each of the N−1 others per round.
pub fn berkeley(n: u64, rounds: u64) -> Count {
    let k = (n - 1) * rounds;
    Count::of(&[("poll", k), ("time", k), ("adjust", k)])
}

/// Chandy-Misra-Haas: one probe per edge of the cycle a detection finds.
pub fn chandy_misra_haas(cycle_length: u64) -> Count {
    Count::of(&[("probe", cycle_length)])
}

/// All-to-all heartbeats: N(N−1) per period.
pub fn heartbeats(n: u64, periods: u64) -> Count {
    Count::of(&[("heartbeat", n * (n - 1) * periods)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_totals_are_the_textbook_expressions() {
        for n in 3..=12 {
            assert_eq!(chang_roberts_worst(n).total, n * (n + 1) / 2 + n);
            assert_eq!(chang_roberts_best(n).total, 3 * n - 1);
            assert_eq!(bully_worst(n).total, n * n - n - 1);
            assert_eq!(bully_best(n).total, n - 1);
            assert_eq!(ring(n, 0, 1).total, 2 * n);
            assert_eq!(ring(n - 1, 1, 1).total, 2 * (n - 1) + 1);
            assert_eq!(ring(n, 0, n).total, 2 * n * n);
            assert_eq!(majority(n).total, 2 * (n - 1));
            assert_eq!(lamport(n, 10).total, 3 * (n - 1) * 10);
            assert_eq!(ricart_agrawala(n, 10).total, 2 * (n - 1) * 10);
            assert_eq!(suzuki_kasami(n, 10).total, n * 10);
            assert_eq!(berkeley(n, 5).total, 3 * (n - 1) * 5);
        }
        assert_eq!(maekawa(9, 10).total, 3 * (5 - 1) * 10);
        assert_eq!(bully_worst(10).kind("answer"), Some(36));
        assert_eq!(bully_worst(10).kind("vote"), None);
    }

    #[test]
    fn the_rule_totals_match_the_per_entry_costs() {
        // Token ring: 101 TOKEN + 10 REQUEST; Raymond 2, 4, 6, 4, 8, 4, 10, 4, 4, 4.
        assert_eq!(token_ring(9, 10).total, 111);
        assert_eq!(raymond(9, 10).total, 50);
        assert_eq!(raymond(9, 3).total, 2 + 4 + 6);
        assert_eq!((ceil_log2(1), ceil_log2(8), ceil_log2(9), ceil_log2(64)), (0, 3, 4, 6));
        assert_eq!((yoyo_edges(3), yoyo_edges(4), yoyo_edges(8)), (3, 6, 16));
    }
}
