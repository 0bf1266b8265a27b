//! Which image candidate a browser fetches: `srcset` with `x` or `w` descriptors, `sizes`, and
//! `<source media>` in a `<picture>` (HTML's "select an image source").
//!
//! With no viewport given, the largest candidate is taken: the one a large, high-density
//! screen fetches, so a benchmark errs on the heavy side. With `--viewport WIDTH` (CSS pixels,
//! device pixel ratio 1), the browser's choice is made: `sizes` gives the slot width, each `w`
//! candidate's density is its width over the slot's, and the first candidate of density 1 or
//! more is taken, or the one below it when the geometric mean of the two is above 1
//! (Chromium's rule, which saves bytes when the larger is much larger). Media queries are
//! evaluated for `min-width`/`max-width` in px joined by `and` (and `screen`/`all`); any other
//! feature does not match.

/// One candidate: its URL and its density, or its width in pixels.
#[derive(Debug, Clone, PartialEq)]
struct Candidate {
    url: String,
    descriptor: Descriptor,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Descriptor {
    Density(f64),
    Width(f64),
}

/// The URL the browser fetches for an image with these attributes, if any.
pub fn pick(
    srcset: Option<&str>,
    src: Option<&str>,
    sizes: Option<&str>,
    viewport: Option<u32>,
) -> Option<String> {
    let mut candidates = srcset.map(parse).unwrap_or_default();
    let has_width = candidates
        .iter()
        .any(|c| matches!(c.descriptor, Descriptor::Width(_)));
    // `src` is the 1x candidate unless srcset has width descriptors or its own 1x.
    if let Some(src) = src.filter(|s| !s.is_empty()) {
        let has_1x = candidates
            .iter()
            .any(|c| c.descriptor == Descriptor::Density(1.0));
        if !has_width && !has_1x {
            candidates.push(Candidate {
                url: src.to_owned(),
                descriptor: Descriptor::Density(1.0),
            });
        }
    }
    if candidates.is_empty() {
        return None;
    }
    let slot = viewport.map(|w| slot_width(sizes, f64::from(w)));
    let mut scored: Vec<(f64, String)> = candidates
        .into_iter()
        .map(|c| {
            let d = match (c.descriptor, slot) {
                (Descriptor::Density(x), _) => x,
                (Descriptor::Width(w), Some(slot)) if slot > 0.0 => w / slot,
                (Descriptor::Width(w), _) => w,
            };
            (d, c.url)
        })
        .collect();
    // Stable: of two candidates of one density, the first stays first.
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    if viewport.is_none() {
        return scored.pop().map(|(_, url)| url);
    }
    let i = scored
        .iter()
        .position(|(d, _)| *d >= 1.0)
        .unwrap_or(scored.len() - 1);
    if i > 0 && (scored[i - 1].0 * scored[i].0).sqrt() > 1.0 {
        return Some(scored[i - 1].1.clone());
    }
    Some(scored[i].1.clone())
}

/// Parses a srcset attribute into candidates (commas inside a URL are kept, as HTML's parser
/// keeps them; a candidate with a descriptor it cannot read is dropped).
fn parse(srcset: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut rest = srcset;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ',');
        if rest.is_empty() {
            return out;
        }
        let end = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let (raw_url, after) = rest.split_at(end);
        let url = raw_url.trim_end_matches(',');
        let (descriptors, next) = if url.len() < raw_url.len() {
            ("", after)
        } else {
            let stop = after.find(',').unwrap_or(after.len());
            (&after[..stop], &after[stop..])
        };
        rest = next;
        let descriptor = match descriptors.split_ascii_whitespace().collect::<Vec<_>>()[..] {
            [] => Some(Descriptor::Density(1.0)),
            [d] | [d, _] => read_descriptor(d),
            _ => None,
        };
        if let Some(descriptor) = descriptor {
            out.push(Candidate {
                url: url.to_owned(),
                descriptor,
            });
        }
    }
}

fn read_descriptor(d: &str) -> Option<Descriptor> {
    let (num, unit) = d.split_at(d.len().checked_sub(1)?);
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n > 0.0)?;
    match unit {
        "x" => Some(Descriptor::Density(n)),
        "w" => Some(Descriptor::Width(n)),
        _ => None,
    }
}

/// The image's slot width in CSS px from `sizes` (default `100vw`).
fn slot_width(sizes: Option<&str>, viewport: f64) -> f64 {
    for entry in sizes.unwrap_or("").split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        // The length is the last token; what comes before it is a media condition.
        let (media, length) = match entry.rfind(|c: char| c.is_ascii_whitespace() || c == ')') {
            Some(i) => (&entry[..=i], entry[i + 1..].trim()),
            None => ("", entry),
        };
        if !media.trim().is_empty() && !media_matches(media, Some(viewport as u32)) {
            continue;
        }
        if let Some(px) = length_px(length, viewport) {
            return px;
        }
    }
    viewport
}

fn length_px(length: &str, viewport: f64) -> Option<f64> {
    let number = |s: &str| s.parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0);
    if let Some(n) = length.strip_suffix("px") {
        number(n)
    } else if let Some(n) = length.strip_suffix("vw") {
        number(n).map(|n| n * viewport / 100.0)
    } else {
        None
    }
}

/// Whether a media query list matches a screen `viewport` px wide (`None`: as wide as any).
pub fn media_matches(media: &str, viewport: Option<u32>) -> bool {
    media.split(',').any(|query| query_matches(query, viewport))
}

fn query_matches(query: &str, viewport: Option<u32>) -> bool {
    let query = query.trim().to_ascii_lowercase();
    if query.is_empty() {
        return true;
    }
    query.split(" and ").all(|part| {
        let part = part.trim();
        match part {
            "screen" | "all" | "only screen" => return true,
            _ => {}
        }
        let Some(inner) = part.strip_prefix('(').and_then(|p| p.strip_suffix(')')) else {
            return false;
        };
        let Some((feature, value)) = inner.split_once(':') else {
            return false;
        };
        let Some(px) = value
            .trim()
            .strip_suffix("px")
            .and_then(|v| v.trim().parse::<f64>().ok())
        else {
            return false;
        };
        match (feature.trim(), viewport) {
            ("min-width", None) => true,
            ("max-width", None) => false,
            ("min-width", Some(w)) => f64::from(w) >= px,
            ("max-width", Some(w)) => f64::from(w) <= px,
            _ => false,
        }
    })
}

/// Whether a `<source type>` names an image format browsers decode.
pub fn decodable(mime: &str) -> bool {
    matches!(
        mime.trim().to_ascii_lowercase().as_str(),
        "image/png"
            | "image/jpeg"
            | "image/jpg"
            | "image/gif"
            | "image/webp"
            | "image/avif"
            | "image/svg+xml"
            | "image/bmp"
            | "image/x-icon"
            | "image/vnd.microsoft.icon"
            | "image/apng"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_candidate_without_a_viewport() {
        let set = "a.png 400w, b.png 800w, c.png 1600w";
        assert_eq!(pick(Some(set), Some("s.png"), None, None).unwrap(), "c.png");
        assert_eq!(
            pick(Some("x1.png, x2.png 2x"), Some("s.png"), None, None).unwrap(),
            "x2.png"
        );
        assert_eq!(pick(None, Some("s.png"), None, None).unwrap(), "s.png");
        assert_eq!(pick(Some(""), None, None, None), None);
    }

    #[test]
    fn viewport_and_sizes_pick_as_a_browser_does() {
        let set = "a.png 400w, b.png 800w, c.png 1600w";
        assert_eq!(pick(Some(set), None, None, Some(800)).unwrap(), "b.png");
        assert_eq!(
            pick(Some(set), None, Some("50vw"), Some(800)).unwrap(),
            "a.png"
        );
        let sizes = "(max-width: 500px) 400px, 1600px";
        assert_eq!(
            pick(Some(set), None, Some(sizes), Some(400)).unwrap(),
            "a.png"
        );
        assert_eq!(
            pick(Some(set), None, Some(sizes), Some(900)).unwrap(),
            "c.png"
        );
        // 0.5 and 1.25: their geometric mean is below 1, so the larger is taken.
        assert_eq!(
            pick(Some("a.png 400w, b.png 1000w"), None, None, Some(800)).unwrap(),
            "b.png"
        );
        // 0.9 and 2.5: the mean is above 1, so the slightly small one is enough.
        assert_eq!(
            pick(Some("a.png 720w, b.png 2000w"), None, None, Some(800)).unwrap(),
            "a.png"
        );
        assert_eq!(
            pick(Some("x1.png, x2.png 2x"), None, None, Some(800)).unwrap(),
            "x1.png"
        );
    }

    #[test]
    fn candidate_urls_may_hold_commas() {
        let c = parse("img.png?a=1,2 2x,other.png");
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].url, "img.png?a=1,2");
        assert_eq!(c[1].url, "other.png");
        assert!(parse("bad.png 2q").is_empty());
    }

    #[test]
    fn media_queries() {
        assert!(media_matches("(min-width: 600px)", Some(800)));
        assert!(!media_matches("(max-width: 600px)", Some(800)));
        assert!(media_matches("screen and (max-width: 900px)", Some(800)));
        assert!(!media_matches("print", Some(800)));
        assert!(media_matches("print, (min-width: 1px)", None));
        assert!(!media_matches("(orientation: portrait)", Some(800)));
    }
}
