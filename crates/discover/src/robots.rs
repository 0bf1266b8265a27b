//! robots.txt (RFC 9309, the Robots Exclusion Protocol): which paths the crawl may follow.
//!
//! Written here rather than taken from a crate: the protocol is a page long, and what is needed
//! is exactly its matching rules. The groups naming `flint` (case-insensitive) apply, or else
//! those of `*`; several groups for the same agent are merged. The rule with the longest
//! matching pattern decides, `Allow` winning a tie; `*` matches any run of characters and a
//! final `$` the end of the path. `/robots.txt` itself is always allowed. `Crawl-delay`, not in
//! the RFC but widely written, slows the crawl when it asks for more than `--crawl-rate` does
//! (a day between requests at most, however long it asks for).

/// The product token matched against `User-agent` lines.
pub const AGENT: &str = "flint";

/// The rules that apply to flint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Robots {
    /// (allow, pattern)
    rules: Vec<(bool, String)>,
    /// Seconds between requests asked for, if any.
    pub crawl_delay: Option<f64>,
    /// Everything is disallowed: robots.txt could not be fetched for a server-side reason
    /// (RFC 9309 2.3.1.4).
    disallow_all: bool,
}

impl Robots {
    /// No robots.txt (4xx): everything is allowed.
    pub fn allow_all() -> Robots {
        Robots::default()
    }

    /// robots.txt was unreachable (5xx, network error): nothing may be crawled.
    pub fn disallow_all() -> Robots {
        Robots {
            disallow_all: true,
            ..Robots::default()
        }
    }

    /// The rules for flint in a robots.txt's text: the groups naming `flint`, else those of
    /// `*`; a line that is not a rule is skipped.
    pub fn parse(text: &str) -> Robots {
        #[derive(Default)]
        struct Group {
            agents: Vec<String>,
            rules: Vec<(bool, String)>,
            delay: Option<f64>,
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut in_agents = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            match key.as_str() {
                "user-agent" => {
                    if !in_agents {
                        groups.push(Group::default());
                    }
                    in_agents = true;
                    if let Some(g) = groups.last_mut() {
                        g.agents.push(value.to_ascii_lowercase());
                    }
                }
                "allow" | "disallow" => {
                    in_agents = false;
                    // An empty Disallow allows everything: no rule.
                    if let (Some(g), false) = (groups.last_mut(), value.is_empty()) {
                        g.rules.push((key == "allow", value.to_owned()));
                    }
                }
                "crawl-delay" => {
                    in_agents = false;
                    if let Some(g) = groups.last_mut() {
                        g.delay = value
                            .parse()
                            .ok()
                            .filter(|d: &f64| d.is_finite() && *d >= 0.0);
                    }
                }
                _ => {}
            }
        }
        let named = |agent: &str| -> Vec<&Group> {
            groups
                .iter()
                .filter(|g| g.agents.iter().any(|a| a == agent))
                .collect()
        };
        let mut chosen = named(AGENT);
        if chosen.is_empty() {
            chosen = named("*");
        }
        Robots {
            rules: chosen
                .iter()
                .flat_map(|g| g.rules.iter().cloned())
                .collect(),
            crawl_delay: chosen.iter().find_map(|g| g.delay),
            disallow_all: false,
        }
    }

    /// Whether `path` (path and query, as requested) may be crawled.
    pub fn allows(&self, path: &str) -> bool {
        if path == "/robots.txt" {
            return true;
        }
        if self.disallow_all {
            return false;
        }
        let mut best: Option<(usize, bool)> = None;
        for (allow, pattern) in &self.rules {
            if matches(pattern.as_bytes(), path.as_bytes()) {
                let len = pattern.len();
                best = match best {
                    Some((l, a)) if l > len || (l == len && a) => Some((l, a)),
                    _ => Some((len, *allow)),
                };
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }
}

/// Whether `pattern` matches a prefix of `path` (`*` any run, a final `$` the end).
fn matches(pattern: &[u8], path: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix(b"$") {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    // The positions in `path` each prefix of the pattern can end at, as a bit set.
    let mut ends = vec![false; path.len() + 1];
    ends[0] = true;
    for &c in pattern {
        let mut next = vec![false; path.len() + 1];
        if c == b'*' {
            let mut any = false;
            for i in 0..=path.len() {
                any |= ends[i];
                next[i] = any;
            }
        } else {
            for i in 0..path.len() {
                if ends[i] && path[i] == c {
                    next[i + 1] = true;
                }
            }
        }
        ends = next;
        if !ends.contains(&true) {
            return false;
        }
    }
    if anchored {
        ends[path.len()]
    } else {
        ends.contains(&true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_match_wins_and_allow_wins_a_tie() {
        let r = Robots::parse(
            "User-agent: *\nDisallow: /private/\nAllow: /private/open\n\
             Disallow: /*.pdf$\nDisallow: /same\nAllow: /same\n",
        );
        assert!(r.allows("/"));
        assert!(!r.allows("/private/x.html"));
        assert!(r.allows("/private/open.html"));
        assert!(!r.allows("/docs/a.pdf"));
        assert!(r.allows("/docs/a.pdf?download=1"));
        assert!(r.allows("/same"));
        assert!(r.allows("/robots.txt"));
    }

    #[test]
    fn our_own_group_wins_over_the_star() {
        let text = "User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nUser-Agent: FLINT\n\
                    Disallow: /no/ # comment\nCrawl-delay: 2.5\n";
        let r = Robots::parse(text);
        assert!(r.allows("/yes.html"));
        assert!(!r.allows("/no/x"));
        assert_eq!(r.crawl_delay, Some(2.5));
        assert!(!Robots::parse("User-agent: *\nDisallow: /\n").allows("/a"));
        assert!(Robots::parse("User-agent: *\nDisallow:\n").allows("/a"));
        assert!(!Robots::disallow_all().allows("/a"));
        assert!(Robots::allow_all().allows("/a"));
    }
}
