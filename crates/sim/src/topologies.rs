//! Building the communication graph of a run.
//!
//! An algorithm declares the [`TopologyKind`] it is written for; a run may choose, for the kinds
//! that run on arbitrary graphs, which graph it gets (`--graph`, a [`ShapeSpec`]): a random
//! connected graph, a grid, a balanced binary tree, a line, a star, a random tree, or an edge list
//! read from a file. [`check`] says which shapes a kind accepts — graph algorithms take every
//! connected shape, tree algorithms only the acyclic ones, ring and complete-graph algorithms none
//! — and [`build_shape`] builds the chosen one. A shape refused is a [`ShapeError`], an edge-list
//! file that cannot be read a [`GraphFileError`]; each says in one line what was wrong and what
//! is allowed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::TopologyKind;
use ringleader_algorithms::topology::{TopologyError, binary_tree_edges, default_edges, random_connected};
use ringleader_core::{NodeId, Topology};
use serde::{Deserialize, Serialize};

/// The shapes `--graph` names, in the order `--help` lists them.
pub const SHAPE_NAMES: &str = "random, grid, tree, line, star, random-tree, file:PATH";

/// What `--graph` (or `graph = "…"` in a scenario) says: a shape's name, or an edge-list file
/// not yet read. [`ShapeSpec::load`] turns it into a [`Shape`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ShapeSpec {
    /// A random connected graph with `--edges` edges ([`random_connected`]).
    Random,
    /// A grid of ⌊√N⌋ rows filled row by row, 4-neighbour ([`grid_edges`]).
    Grid,
    /// A balanced binary tree rooted at position 0 ([`binary_tree_edges`]).
    Tree,
    /// A path 0 – 1 – … – N−1 ([`line_edges`]).
    Line,
    /// Position 0 joined to every other position ([`star_edges`]).
    Star,
    /// A random recursive tree: each position attaches to a uniformly chosen earlier one
    /// ([`random_tree_edges`]).
    RandomTree,
    /// An edge-list file ([`parse_edge_list`]).
    File(PathBuf),
}

impl FromStr for ShapeSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Ok(match s {
            "random" => ShapeSpec::Random,
            "grid" => ShapeSpec::Grid,
            "tree" => ShapeSpec::Tree,
            "line" => ShapeSpec::Line,
            "star" => ShapeSpec::Star,
            "random-tree" => ShapeSpec::RandomTree,
            _ => match s.strip_prefix("file:") {
                Some(path) if !path.trim().is_empty() => ShapeSpec::File(PathBuf::from(path.trim())),
                Some(_) => {
                    return Err(
                        "\"file:\" names no file; give the edge list's path, e.g. file:edges.txt".into()
                    );
                }
                None => return Err(format!("unknown shape {s:?}; allowed: {SHAPE_NAMES}")),
            },
        })
    }
}

impl fmt::Display for ShapeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeSpec::File(path) => write!(f, "file:{}", path.display()),
            other => f.write_str(shape_name(other)),
        }
    }
}

fn shape_name(s: &ShapeSpec) -> &'static str {
    match s {
        ShapeSpec::Random => "random",
        ShapeSpec::Grid => "grid",
        ShapeSpec::Tree => "tree",
        ShapeSpec::Line => "line",
        ShapeSpec::Star => "star",
        ShapeSpec::RandomTree => "random-tree",
        ShapeSpec::File(_) => "file",
    }
}

impl From<ShapeSpec> for String {
    fn from(s: ShapeSpec) -> String {
        s.to_string()
    }
}

impl TryFrom<String> for ShapeSpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl ShapeSpec {
    /// The shape for `n` nodes; an edge-list file is read and checked here (every position in
    /// 1..n, no self-loop, no edge twice). Errors start with `--graph SPEC:`.
    pub fn load(self, n: u32) -> Result<Shape, GraphFileError> {
        Ok(match self {
            ShapeSpec::Random => Shape::Random,
            ShapeSpec::Grid => Shape::Grid,
            ShapeSpec::Tree => Shape::Tree,
            ShapeSpec::Line => Shape::Line,
            ShapeSpec::Star => Shape::Star,
            ShapeSpec::RandomTree => Shape::RandomTree,
            ShapeSpec::File(path) => {
                let text = match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    Err(error) => return Err(GraphFileError::Unreadable { path, error }),
                };
                match parse_edge_list(&text, n) {
                    Ok(edges) => Shape::File(EdgeList { path, edges }),
                    Err(error) => return Err(GraphFileError::EdgeList { path, error }),
                }
            }
        })
    }
}

/// Why `--graph file:PATH` gave no edge list.
#[derive(Debug, thiserror::Error)]
pub enum GraphFileError {
    /// The file could not be read.
    #[error("--graph file:{}: cannot read it: {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
    /// The file is not an edge list for the run's nodes.
    #[error("--graph file:{}: {error}", path.display())]
    EdgeList {
        /// The file.
        path: PathBuf,
        /// The first line that is wrong, and why.
        error: EdgeListError,
    },
}

/// The first wrong line of an edge list ([`parse_edge_list`]); lines count from 1, positions
/// are 1-based as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EdgeListError {
    /// The line does not hold exactly two words.
    #[error("line {line}: expected two positions \"A B\", found {found:?}")]
    NotAPair {
        /// The line.
        line: usize,
        /// What it holds (without its comment).
        found: String,
    },
    /// A word is not a number.
    #[error("line {line}: {word:?} is not a position (positions are 1..{n})")]
    NotAPosition {
        /// The line.
        line: usize,
        /// The word.
        word: String,
        /// The run's node count.
        n: u32,
    },
    /// A position is 0 or above the node count.
    #[error("line {line}: position {position} is outside 1..{n}")]
    Outside {
        /// The line.
        line: usize,
        /// The position written.
        position: u64,
        /// The run's node count.
        n: u32,
    },
    /// The pair joins a position to itself.
    #[error("line {line}: {position} {position} joins a position to itself")]
    SelfLoop {
        /// The line.
        line: usize,
        /// The position.
        position: u64,
    },
    /// The edge is already listed (in either order).
    #[error("line {line}: the edge {a} {b} is already on line {first}")]
    Repeated {
        /// The line.
        line: usize,
        /// The edge's first position, as written on this line.
        a: u64,
        /// Its second position.
        b: u64,
        /// The line that listed it first.
        first: usize,
    },
}

/// Why a run's graph is refused ([`check`]) or cannot be built ([`build_shape`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A ring or complete-graph algorithm was given a `--graph`.
    #[error("--graph {shape}: {algorithm} runs on {} and takes no --graph", fixed_graph(*kind))]
    GraphNotTaken {
        /// The shape given.
        shape: Shape,
        /// The algorithm.
        algorithm: String,
        /// The graph it runs on.
        kind: TopologyKind,
    },
    /// A ring or complete-graph algorithm was given `--edges`.
    #[error("--edges {edges}: {algorithm} runs on {} and takes no --edges", fixed_graph(*kind))]
    EdgesNotTaken {
        /// The edge count given.
        edges: u64,
        /// The algorithm.
        algorithm: String,
        /// The graph it runs on.
        kind: TopologyKind,
    },
    /// `--edges` with a shape other than `random`.
    #[error(
        "--edges {edges}: only --graph random takes an edge count, and {algorithm} runs on --graph {shape}{}",
        if *shape_given { "" } else { " (its default)" }
    )]
    EdgesWithoutRandom {
        /// The edge count given.
        edges: u64,
        /// The algorithm.
        algorithm: String,
        /// The shape it runs on.
        shape: Shape,
        /// Whether the run chose the shape (else it is the algorithm's default).
        shape_given: bool,
    },
    /// A random graph's edge count cannot make a connected graph.
    #[error(transparent)]
    Edges(#[from] TopologyError),
    /// An edge-list file names a position beyond the run's nodes.
    #[error("--graph {shape}: position {position} is outside 1..{n}")]
    Outside {
        /// The shape (an edge-list file).
        shape: Shape,
        /// The position, 1-based.
        position: u32,
        /// The run's node count.
        n: u32,
    },
    /// An edge-list file's graph is not connected.
    #[error("--graph {shape}: the graph is not connected ({})", describe_unreached(unreached))]
    NotConnected {
        /// The shape (an edge-list file).
        shape: Shape,
        /// The positions that cannot reach position 0, 0-based, in increasing order.
        unreached: Vec<NodeId>,
    },
    /// A tree algorithm was given a shape that is not a tree.
    #[error(
        "--graph {shape}: {algorithm} needs a tree (tree, line, star, random-tree, or a file holding a tree); \
         {}, a tree on {n} nodes has {}",
        tree_shortfall(shape, *n, *edges, *edges_given),
        n.saturating_sub(1)
    )]
    NotATree {
        /// The shape.
        shape: Shape,
        /// The algorithm.
        algorithm: String,
        /// The run's node count.
        n: u32,
        /// The shape's edge count.
        edges: u64,
        /// Whether `--edges` was given (a random graph's count is otherwise its default).
        edges_given: bool,
    },
}

/// The graph a ring or complete-graph algorithm runs on, with its article.
fn fixed_graph(kind: TopologyKind) -> &'static str {
    match kind {
        TopologyKind::Complete => "a complete graph",
        TopologyKind::Ring => "a ring",
        _ => "a bidirectional ring",
    }
}

/// What makes `shape` (`edges` edges on `n` nodes) no tree.
fn tree_shortfall(shape: &Shape, n: u32, edges: u64, edges_given: bool) -> String {
    match shape {
        Shape::Grid => format!("the {} has {edges} edges", grid_label(n)),
        Shape::Random if !edges_given => format!(
            "the random graph has {edges} edges (2N by default; --edges {} makes a random tree)",
            n.saturating_sub(1)
        ),
        Shape::Random => format!("the random graph has {edges} edges"),
        _ => format!("the file holds {edges} edges"),
    }
}

/// An edge list read from a file: 0-based positions, each undirected edge once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeList {
    /// The file it came from.
    pub path: PathBuf,
    /// The edges, as 0-based positions.
    pub edges: Vec<(NodeId, NodeId)>,
}

/// The communication graph a run asked for, ready to build: a [`ShapeSpec`] with its edge-list
/// file read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A random connected graph with `--edges` edges.
    Random,
    /// ⌊√N⌋ rows filled row by row, 4-neighbour.
    Grid,
    /// A balanced binary tree rooted at position 0.
    Tree,
    /// A path.
    Line,
    /// Position 0 in the middle.
    Star,
    /// A random recursive tree.
    RandomTree,
    /// An edge list from a file.
    File(EdgeList),
}

impl fmt::Display for Shape {
    /// The `--graph` spelling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Random => f.write_str("random"),
            Shape::Grid => f.write_str("grid"),
            Shape::Tree => f.write_str("tree"),
            Shape::Line => f.write_str("line"),
            Shape::Star => f.write_str("star"),
            Shape::RandomTree => f.write_str("random-tree"),
            Shape::File(list) => write!(f, "file:{}", list.path.display()),
        }
    }
}

impl Shape {
    /// The shape an algorithm of `kind` gets when the run names none (`None` for rings and
    /// complete graphs, which take no `--graph`).
    pub fn default_for(kind: TopologyKind) -> Option<Shape> {
        match kind {
            TopologyKind::Graph => Some(Shape::Random),
            TopologyKind::Tree => Some(Shape::Tree),
            TopologyKind::Complete | TopologyKind::Ring | TopologyKind::BiRing => None,
        }
    }

    /// The number of edges on `n` nodes (for `Random`, `edges` or its default).
    pub fn edge_count(&self, n: u32, edges: Option<u64>) -> u64 {
        let n64 = n as u64;
        match self {
            Shape::Random => edges.unwrap_or(default_edges(n)),
            Shape::Grid => {
                let (_, c) = grid_dims(n);
                let c = c as u64;
                let horizontal = (n64 / c) * (c - 1) + (n64 % c).saturating_sub(1);
                horizontal + n64.saturating_sub(c)
            }
            Shape::Tree | Shape::Line | Shape::Star | Shape::RandomTree => n64.saturating_sub(1),
            Shape::File(list) => list.edges.len() as u64,
        }
    }

    /// Builds the graph on `n` nodes; `edges` sizes a random graph (default [`default_edges`]).
    pub fn build(
        &self,
        n: u32,
        edges: Option<u64>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Result<Topology, TopologyError> {
        Ok(match self {
            Shape::Random => random_connected(n, edges.unwrap_or(default_edges(n)), rng)?,
            Shape::Grid => Topology::from_edges(n, &grid_edges(n)),
            Shape::Tree => Topology::from_edges(n, &binary_tree_edges(n)),
            Shape::Line => Topology::from_edges(n, &line_edges(n)),
            Shape::Star => Topology::from_edges(n, &star_edges(n)),
            Shape::RandomTree => Topology::from_edges(n, &random_tree_edges(n, rng)),
            Shape::File(list) => Topology::from_edges(n, &list.edges),
        })
    }
}

/// The topology for `algorithm` (of `kind`) on `n` nodes in the run's chosen `shape` (`None`:
/// the kind's default), after [`check`]ing that the kind accepts it.
pub fn build_shape(
    kind: TopologyKind,
    algorithm: &str,
    n: u32,
    shape: Option<&Shape>,
    edges: Option<u64>,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<Topology, ShapeError> {
    check(kind, algorithm, n, shape, edges)?;
    Ok(match shape {
        None => kind.default_topology(n, edges, rng)?,
        Some(s) => s.build(n, edges, rng)?,
    })
}

/// Whether `algorithm`, written for `kind`, can run on `shape` (`None`: its default) with
/// `edges`: graph algorithms take every connected shape, tree algorithms only acyclic ones, ring
/// and complete-graph algorithms no `--graph` and no `--edges` at all; `--edges` goes with
/// `--graph random` only. Every error is one line that says what was wrong and what is allowed.
pub fn check(
    kind: TopologyKind,
    algorithm: &str,
    n: u32,
    shape: Option<&Shape>,
    edges: Option<u64>,
) -> Result<(), ShapeError> {
    let algorithm = algorithm.to_string();
    let Some(default) = Shape::default_for(kind) else {
        if let Some(s) = shape {
            return Err(ShapeError::GraphNotTaken { shape: s.clone(), algorithm, kind });
        }
        if let Some(edges) = edges {
            return Err(ShapeError::EdgesNotTaken { edges, algorithm, kind });
        }
        return Ok(());
    };
    let shape_given = shape.is_some();
    let shape = shape.unwrap_or(&default);
    if let (Some(edges), false) = (edges, *shape == Shape::Random) {
        return Err(ShapeError::EdgesWithoutRandom { edges, algorithm, shape: shape.clone(), shape_given });
    }
    let n64 = n as u64;
    match shape {
        Shape::Random => {
            let m = edges.unwrap_or(default_edges(n));
            let (min, max) = (n64.saturating_sub(1), n64 * n64.saturating_sub(1) / 2);
            if m < min || m > max {
                return Err(TopologyError::Edges { edges: m, n, min, max }.into());
            }
        }
        Shape::File(list) => {
            if let Some(&(a, b)) = list.edges.iter().find(|&&(a, b)| a >= n || b >= n) {
                return Err(ShapeError::Outside { shape: shape.clone(), position: a.max(b) + 1, n });
            }
            let unreached = unreached(&Topology::from_edges(n, &list.edges));
            if !unreached.is_empty() {
                return Err(ShapeError::NotConnected { shape: shape.clone(), unreached });
            }
        }
        _ => {}
    }
    let m = shape.edge_count(n, edges);
    if kind == TopologyKind::Tree && m != n64.saturating_sub(1) {
        return Err(ShapeError::NotATree {
            shape: shape.clone(),
            algorithm,
            n,
            edges: m,
            edges_given: edges.is_some(),
        });
    }
    Ok(())
}

/// The grid's rows and columns for `n` nodes: R = ⌊√n⌋ rows of C = ⌈n / R⌉ columns, the last
/// row holding the remaining n − (R − 1)·C positions.
pub fn grid_dims(n: u32) -> (u32, u32) {
    let r = n.isqrt().max(1);
    (r, n.div_ceil(r).max(1))
}

/// `3×3 grid`, or `3×4 grid (last row 2 of 4)` when the last row is partial.
pub fn grid_label(n: u32) -> String {
    let (r, c) = grid_dims(n);
    match n % c {
        0 => format!("{r}×{c} grid"),
        k => format!("{r}×{c} grid (last row {k} of {c})"),
    }
}

/// The grid on `n` nodes: position p sits in row p / C, column p mod C ([`grid_dims`]) and is
/// joined to its right and lower neighbours when they exist. Every node has at most 4
/// neighbours; a partial last row still hangs from the full row above it, so the grid is
/// connected.
pub fn grid_edges(n: u32) -> Vec<(NodeId, NodeId)> {
    let (_, c) = grid_dims(n);
    let mut edges = Vec::with_capacity(2 * n as usize);
    for p in 0..n {
        if (p + 1) % c != 0 && p + 1 < n {
            edges.push((p, p + 1));
        }
        if p + c < n {
            edges.push((p, p + c));
        }
    }
    edges
}

/// The path 0 – 1 – … – (n − 1).
pub fn line_edges(n: u32) -> Vec<(NodeId, NodeId)> {
    (1..n).map(|i| (i - 1, i)).collect()
}

/// The star: position 0 joined to every other position.
pub fn star_edges(n: u32) -> Vec<(NodeId, NodeId)> {
    (1..n).map(|i| (0, i)).collect()
}

/// A random recursive tree (uniform attachment): positions join in order, each to a uniformly
/// chosen earlier position, so position 0 is the root and every parent precedes its children.
pub fn random_tree_edges(n: u32, rng: &mut Xoshiro256PlusPlus) -> Vec<(NodeId, NodeId)> {
    (1..n).map(|i| (rng.random_range(0..i), i)).collect()
}

/// Reads an edge list for `n` nodes: one `A B` pair of 1-based positions per line, `#` starts a
/// comment, blank lines are skipped. Every position must be in 1..n, no pair may join a position
/// to itself or repeat an edge (in either order). Errors name the line. Returns 0-based pairs.
pub fn parse_edge_list(text: &str, n: u32) -> Result<Vec<(NodeId, NodeId)>, EdgeListError> {
    let mut edges = Vec::new();
    let mut seen: BTreeMap<(NodeId, NodeId), usize> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split_once('#').map_or(raw, |(b, _)| b).trim();
        if body.is_empty() {
            continue;
        }
        let words: Vec<&str> = body.split_whitespace().collect();
        let [a, b] = words[..] else {
            return Err(EdgeListError::NotAPair { line, found: body.to_string() });
        };
        let position = |w: &str| -> Result<NodeId, EdgeListError> {
            let p: u64 =
                w.parse().map_err(|_| EdgeListError::NotAPosition { line, word: w.to_string(), n })?;
            if p == 0 || p > n as u64 {
                return Err(EdgeListError::Outside { line, position: p, n });
            }
            Ok(p as NodeId - 1)
        };
        let (a, b) = (position(a)?, position(b)?);
        if a == b {
            return Err(EdgeListError::SelfLoop { line, position: u64::from(a) + 1 });
        }
        if let Some(first) = seen.insert((a.min(b), a.max(b)), line) {
            return Err(EdgeListError::Repeated { line, a: u64::from(a) + 1, b: u64::from(b) + 1, first });
        }
        edges.push((a, b));
    }
    Ok(edges)
}

/// The positions that cannot reach position 0, in increasing order (empty when connected).
pub fn unreached(t: &Topology) -> Vec<NodeId> {
    let n = t.len() as usize;
    if n == 0 {
        return Vec::new();
    }
    let mut seen = vec![false; n];
    let mut stack = vec![0];
    seen[0] = true;
    while let Some(x) = stack.pop() {
        for y in t.neighbors(x) {
            if !seen[y as usize] {
                seen[y as usize] = true;
                stack.push(y);
            }
        }
    }
    (0..n as NodeId).filter(|&p| !seen[p as usize]).collect()
}

/// `positions 7, 8 cannot reach 1` (1-based, the first ten named).
fn describe_unreached(unreached: &[NodeId]) -> String {
    let shown: Vec<String> = unreached.iter().take(10).map(|p| (p + 1).to_string()).collect();
    let more = unreached.len().saturating_sub(10);
    match (unreached.len(), more) {
        (1, _) => format!("position {} cannot reach 1", shown[0]),
        (_, 0) => format!("positions {} cannot reach 1", shown.join(", ")),
        _ => format!("positions {} and {more} more cannot reach 1", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn connected(t: &Topology) -> bool {
        unreached(t).is_empty()
    }

    fn max_degree(t: &Topology) -> usize {
        (0..t.len()).map(|p| t.degree(p)).max().unwrap_or(0)
    }

    /// Acyclic and connected: n − 1 edges and everyone reaches position 0.
    fn is_tree(t: &Topology) -> bool {
        connected(t) && t.edge_count() == t.len() as u64 - 1
    }

    #[test]
    fn random_graphs_are_connected_with_the_asked_edge_count() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for (n, m) in [(2, 1), (10, 9), (10, 45), (100, 400)] {
            let t = random_connected(n, m, &mut rng).unwrap();
            assert_eq!(t.edge_count(), m);
            assert!(connected(&t));
        }
        assert!(random_connected(10, 8, &mut rng).is_err());
        assert!(random_connected(4, 7, &mut rng).is_err());
    }

    #[test]
    fn grids_have_sqrt_n_rows_four_neighbours_and_the_counted_edges() {
        assert_eq!(grid_dims(9), (3, 3));
        assert_eq!(grid_dims(10), (3, 4));
        assert_eq!(grid_dims(2), (1, 2));
        assert_eq!(grid_label(10), "3×4 grid (last row 2 of 4)");
        assert_eq!(grid_label(9), "3×3 grid");
        let g = Topology::from_edges(9, &grid_edges(9));
        // 0 1 2 / 3 4 5 / 6 7 8
        assert_eq!(g.neighbors(4).collect::<Vec<_>>(), vec![1, 3, 5, 7]);
        assert_eq!(g.neighbors(0).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(g.neighbors(8).collect::<Vec<_>>(), vec![5, 7]);
        assert_eq!(g.edge_count(), 12);
        // 0 1 2 3 / 4 5 6 7 / 8 9: the partial row hangs under 4 and 5.
        let g = Topology::from_edges(10, &grid_edges(10));
        assert_eq!(g.neighbors(9).collect::<Vec<_>>(), vec![5, 8]);
        assert_eq!(g.neighbors(3).collect::<Vec<_>>(), vec![2, 7]);
        assert!(!g.is_link(3, 4), "no wrap from the end of a row to the next");
        for n in 1..=300u32 {
            let g = Topology::from_edges(n, &grid_edges(n));
            let (r, c) = grid_dims(n);
            assert_eq!(n.div_ceil(c), r, "n = {n}: the grid has exactly ⌊√n⌋ rows");
            assert_eq!(g.edge_count(), Shape::Grid.edge_count(n, None), "n = {n}");
            assert!(connected(&g), "n = {n}");
            assert!(max_degree(&g) <= 4, "n = {n}");
            if n == r * r && n >= 9 {
                assert_eq!(g.edge_count(), 2 * r as u64 * (r as u64 - 1), "square n = {n}");
                assert_eq!(max_degree(&g), 4);
            }
        }
    }

    #[test]
    fn trees_lines_and_stars_are_trees_with_their_degrees() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for n in 1..=200u32 {
            for shape in [Shape::Tree, Shape::Line, Shape::Star, Shape::RandomTree] {
                let t = shape.build(n, None, &mut rng).unwrap();
                assert!(is_tree(&t), "{shape} on {n}");
                assert_eq!(t.edge_count(), shape.edge_count(n, None), "{shape} on {n}");
                // Every position's smallest neighbour is its parent, on the way to position 0.
                for p in 1..n {
                    assert!(t.neighbors(p).next().unwrap() < p, "{shape} on {n}: position {p}");
                }
            }
            let deg = |s: &Shape, rng: &mut Xoshiro256PlusPlus| max_degree(&s.build(n, None, rng).unwrap());
            assert!(deg(&Shape::Tree, &mut rng) <= 3);
            assert!(deg(&Shape::Line, &mut rng) <= 2);
            if n > 1 {
                let star = Shape::Star.build(n, None, &mut rng).unwrap();
                assert_eq!(star.degree(0), n as usize - 1);
                assert!((1..n).all(|p| star.degree(p) == 1));
            }
        }
        let line = Shape::Line.build(5, None, &mut rng).unwrap();
        assert_eq!(line.neighbors(2).collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn random_trees_depend_on_the_seed_only() {
        let tree = |seed| random_tree_edges(50, &mut Xoshiro256PlusPlus::seed_from_u64(seed));
        assert_eq!(tree(1), tree(1));
        assert_ne!(tree(1), tree(2));
        // Uniform attachment is not a line or a star: over 50 nodes, depth and degrees vary.
        let t = Topology::from_edges(50, &tree(1));
        assert!(max_degree(&t) > 2 && t.degree(0) < 49);
    }

    #[test]
    fn edge_lists_read_pairs_comments_and_blank_lines() {
        let text = "# a triangle and a tail\n1 2\n\n2 3   # trailing comment\n\t3 1\n3 4\n";
        assert_eq!(parse_edge_list(text, 4).unwrap(), vec![(0, 1), (1, 2), (2, 0), (2, 3)]);
        let err = |text: &str, n| parse_edge_list(text, n).unwrap_err().to_string();
        assert_eq!(err("1 2\n2 3\n\n3 11\n", 10), "line 4: position 11 is outside 1..10");
        assert_eq!(err("0 1\n", 10), "line 1: position 0 is outside 1..10");
        assert_eq!(err("1 2 3\n", 10), "line 1: expected two positions \"A B\", found \"1 2 3\"");
        assert_eq!(err("1\n", 10), "line 1: expected two positions \"A B\", found \"1\"");
        assert_eq!(err("1 x\n", 10), "line 1: \"x\" is not a position (positions are 1..10)");
        assert_eq!(err("3 3\n", 10), "line 1: 3 3 joins a position to itself");
        assert_eq!(err("1 2\n# c\n2 1\n", 10), "line 3: the edge 2 1 is already on line 1");
    }

    #[test]
    fn each_kind_accepts_its_shapes_and_says_why_not() {
        use TopologyKind::*;
        let file = |edges: &[(u32, u32)]| {
            Shape::File(EdgeList {
                path: "g.txt".into(),
                edges: edges.iter().map(|&(a, b)| (a - 1, b - 1)).collect(),
            })
        };
        for s in [Shape::Random, Shape::Grid, Shape::Tree, Shape::Line, Shape::Star, Shape::RandomTree] {
            assert_eq!(check(Graph, "yoyo", 9, Some(&s), None), Ok(()), "{s}");
        }
        for s in [Shape::Tree, Shape::Line, Shape::Star, Shape::RandomTree] {
            assert_eq!(check(Tree, "raymond", 9, Some(&s), None), Ok(()), "{s}");
        }
        assert_eq!(
            check(Tree, "raymond", 9, Some(&Shape::Grid), None).unwrap_err().to_string(),
            "--graph grid: raymond needs a tree (tree, line, star, random-tree, or a file holding a tree); \
             the 3×3 grid has 12 edges, a tree on 9 nodes has 8"
        );
        // Grids on 2 or 3 nodes are lines, hence trees; a random graph with N − 1 edges is a tree.
        assert_eq!(check(Tree, "raymond", 3, Some(&Shape::Grid), None), Ok(()));
        assert_eq!(check(Tree, "raymond", 10, Some(&Shape::Random), Some(9)), Ok(()));
        assert!(
            check(Tree, "raymond", 10, Some(&Shape::Random), None)
                .unwrap_err().to_string()
                .ends_with("the random graph has 20 edges (2N by default; --edges 9 makes a random tree), a tree on 10 nodes has 9")
        );
        assert_eq!(
            check(Ring, "chang-roberts", 9, Some(&Shape::Grid), None).unwrap_err().to_string(),
            "--graph grid: chang-roberts runs on a ring and takes no --graph"
        );
        assert_eq!(
            check(BiRing, "hirschberg-sinclair", 9, None, Some(12)).unwrap_err().to_string(),
            "--edges 12: hirschberg-sinclair runs on a bidirectional ring and takes no --edges"
        );
        assert!(
            check(Complete, "bully", 9, Some(&Shape::Random), None)
                .unwrap_err()
                .to_string()
                .contains("a complete graph")
        );
        assert_eq!(check(Complete, "bully", 9, None, None), Ok(()));
        assert_eq!(
            check(Graph, "yoyo", 9, Some(&Shape::Grid), Some(12)).unwrap_err().to_string(),
            "--edges 12: only --graph random takes an edge count, and yoyo runs on --graph grid"
        );
        assert_eq!(
            check(Tree, "raymond", 9, None, Some(8)).unwrap_err().to_string(),
            "--edges 8: only --graph random takes an edge count, and raymond runs on --graph tree (its default)"
        );
        assert!(
            check(Graph, "yoyo", 9, None, Some(7))
                .unwrap_err()
                .to_string()
                .contains("between 8 and 36 edges")
        );
        // Files: connected for graph algorithms, a tree for tree algorithms.
        let triangle_and_tail = file(&[(1, 2), (2, 3), (3, 1), (3, 4)]);
        assert_eq!(check(Graph, "yoyo", 4, Some(&triangle_and_tail), None), Ok(()));
        assert_eq!(
            check(Tree, "raymond", 4, Some(&triangle_and_tail), None).unwrap_err().to_string(),
            "--graph file:g.txt: raymond needs a tree (tree, line, star, random-tree, or a file holding a tree); \
             the file holds 4 edges, a tree on 4 nodes has 3"
        );
        assert_eq!(check(Tree, "raymond", 4, Some(&file(&[(2, 1), (4, 2), (3, 2)])), None), Ok(()));
        assert_eq!(
            check(Graph, "yoyo", 8, Some(&file(&[(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (7, 8)])), None)
                .unwrap_err()
                .to_string(),
            "--graph file:g.txt: the graph is not connected (positions 7, 8 cannot reach 1)"
        );
        let far = check(Graph, "yoyo", 30, Some(&file(&[(1, 2)])), None).unwrap_err().to_string();
        assert!(
            far.ends_with("(positions 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 and 18 more cannot reach 1)"),
            "{far}"
        );
        assert!(
            check(Graph, "yoyo", 3, Some(&file(&[(1, 4)])), None)
                .unwrap_err()
                .to_string()
                .contains("position 4 is outside 1..3")
        );
    }

    #[test]
    fn build_shape_checks_first_and_the_default_shapes_match_build() {
        let mut a = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut b = Xoshiro256PlusPlus::seed_from_u64(9);
        for kind in [TopologyKind::Graph, TopologyKind::Tree, TopologyKind::Ring] {
            assert_eq!(
                build_shape(kind, "x", 20, None, None, &mut a).unwrap(),
                kind.default_topology(20, None, &mut b).unwrap()
            );
        }
        assert!(build_shape(TopologyKind::Tree, "raymond", 9, Some(&Shape::Grid), None, &mut a).is_err());
        let star = build_shape(TopologyKind::Tree, "raymond", 9, Some(&Shape::Star), None, &mut a).unwrap();
        assert_eq!(star.degree(0), 8);
    }

    #[test]
    fn shape_specs_read_and_print_their_spelling() {
        for s in ["random", "grid", "tree", "line", "star", "random-tree", "file:dir/g.txt"] {
            assert_eq!(s.parse::<ShapeSpec>().unwrap().to_string(), s);
        }
        assert_eq!(
            "hexagon".parse::<ShapeSpec>().unwrap_err(),
            "unknown shape \"hexagon\"; allowed: random, grid, tree, line, star, random-tree, file:PATH"
        );
        assert!("file:".parse::<ShapeSpec>().is_err());
        let missing = ShapeSpec::File("/nonexistent/g.txt".into()).load(5).unwrap_err().to_string();
        assert!(missing.starts_with("--graph file:/nonexistent/g.txt: cannot read it:"), "{missing}");
    }
}
