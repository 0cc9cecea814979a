//! Which members run against which: members of two containers pair by name; a single `.npy`
//! against a container pairs with every member (a broadcast bias, for example). `--member
//! PATTERN` (repeatable) keeps the members whose name matches any pattern: `*` matches any run
//! of characters, `?` one character, everything else itself; a pattern that is a plain name is
//! that name. Patterns are flag values, never parts of paths, so `C:\data\a.npz` is never
//! mistaken for a member selection.

use super::Opened;
use anyhow::{bail, Result};

/// Where one side of a pair comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Member `i` of the container.
    Member(usize),
    /// The single `.npy` input.
    Single,
}

/// One member pair: its name and where each side comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub name: String,
    pub sides: [Side; 2],
}

/// The pairs to run, in the first container's order, and the (selected) members that have no
/// partner, or (with [`Shapes::Equal`]) a partner of another shape.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pairing {
    pub pairs: Vec<Pair>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Members of one name whose shapes differ: a changed tensor, not a pair to broadcast.
    pub reshaped: Vec<Reshaped>,
}

/// A member whose shape differs between two containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reshaped {
    pub name: String,
    /// Its shape in A and in B.
    pub shapes: [Vec<u64>; 2],
}

/// What pairs two containers' members of one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shapes {
    /// Any shapes (the checks decide whether they broadcast).
    Any,
    /// Equal shapes only: a member whose shape changed goes to [`Pairing::reshaped`].
    Equal,
}

/// Pairs `inputs` (at least one a container) by member name, keeping the members `patterns`
/// select (all when there are none); two members of one name pair when `shapes` allows their
/// shapes. A pattern that selects nothing in either input is an error that lists some member
/// names, since it is most likely a typo.
pub fn pair(inputs: [&Opened; 2], patterns: &[String], shapes: Shapes) -> Result<Pairing> {
    let selected = |name: &str| patterns.is_empty() || patterns.iter().any(|p| glob_match(p, name));
    let names = |o: &Opened| -> Option<Vec<String>> {
        match o {
            Opened::Single(_) => None,
            Opened::Many(c) => Some(c.members.iter().map(|m| m.name.clone()).collect()),
        }
    };
    let [na, nb] = inputs.map(names);
    for p in patterns {
        let hits = |n: &Option<Vec<String>>| n.iter().flatten().any(|name| glob_match(p, name));
        if !hits(&na) && !hits(&nb) {
            let mut all: Vec<&String> = na.iter().chain(nb.iter()).flatten().collect();
            all.sort();
            all.dedup();
            let shown: Vec<&str> = all.iter().take(8).map(|s| s.as_str()).collect();
            let more = if all.len() > 8 { format!(" and {} more", all.len() - 8) } else { String::new() };
            bail!("--member {p:?} matches no member of either input (members: {}{more})", shown.join(", "));
        }
    }
    let mut out = Pairing::default();
    match (&na, &nb) {
        (Some(a), Some(b)) => {
            let index_b: std::collections::HashMap<&str, usize> =
                b.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
            let shape = |o: &Opened, k: usize| match o {
                Opened::Many(c) => c.members[k].shape.clone(),
                Opened::Single(x) => x.header.shape.clone(),
            };
            for (i, name) in a.iter().enumerate().filter(|(_, n)| selected(n)) {
                match index_b.get(name.as_str()) {
                    Some(&j) if shapes == Shapes::Equal && shape(inputs[0], i) != shape(inputs[1], j) => {
                        let shapes = [shape(inputs[0], i), shape(inputs[1], j)];
                        out.reshaped.push(Reshaped { name: name.clone(), shapes });
                    }
                    Some(&j) => out.pairs.push(Pair { name: name.clone(), sides: [Side::Member(i), Side::Member(j)] }),
                    None => out.only_in_a.push(name.clone()),
                }
            }
            let in_a: std::collections::HashSet<&str> = a.iter().map(|n| n.as_str()).collect();
            out.only_in_b = b.iter().filter(|n| selected(n) && !in_a.contains(n.as_str())).cloned().collect();
        }
        (Some(a), None) => {
            out.pairs = a
                .iter()
                .enumerate()
                .filter(|(_, n)| selected(n))
                .map(|(i, n)| Pair { name: n.clone(), sides: [Side::Member(i), Side::Single] })
                .collect();
        }
        (None, Some(b)) => {
            out.pairs = b
                .iter()
                .enumerate()
                .filter(|(_, n)| selected(n))
                .map(|(j, n)| Pair { name: n.clone(), sides: [Side::Single, Side::Member(j)] })
                .collect();
        }
        (None, None) => bail!("internal error: a member pairing of two .npy files"),
    }
    Ok(out)
}

/// Whether `name` matches `pattern`: `*` any run of characters (`/` included), `?` any one
/// character, every other character itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic linear matcher: on a mismatch, retry from the last `*` one character later.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_like_shell_globs_without_classes() {
        assert!(glob_match("layer.0.weight", "layer.0.weight"));
        assert!(!glob_match("layer.0.weight", "layer.0.weights"));
        assert!(glob_match("*.weight", "model.layers.3.mlp.weight"));
        assert!(glob_match("layers.?.*", "layers.3.bias"));
        assert!(!glob_match("layers.?.*", "layers.10.bias"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match(r"C:\x", r"C:\x"));
    }
}
