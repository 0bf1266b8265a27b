//! `image-set()` (and `-webkit-image-set()`): of its options, the one image a browser fetches.
//! An option is an image (`url()`, `src()`, or a string, which names a URL here) with a
//! resolution (`2x`, `2dppx`, `192dpi`, `75.6dpcm`; none is `1x`) and perhaps a `type()`;
//! one whose type the browser cannot decode is passed over; one that is an image without a URL
//! (a gradient) takes part in the choice, and when chosen nothing is fetched. Chromium takes the option of the lowest resolution at or above the screen's device pixel
//! ratio (1 for flint, as `srcset` is picked at `--viewport` with ratio 1), else the highest.

use crate::srcset::decodable;
use cssparser::{Delimiter, ParseError, Parser, Token};

/// The URL a browser fetches for the `image-set()` whose arguments `p` holds, if any.
pub fn pick(p: &mut Parser<'_>) -> Option<String> {
    let mut options: Vec<(f64, Option<String>)> = Vec::new();
    loop {
        let option = p.parse_until_before(Delimiter::Comma, |p| Ok::<_, ParseError<()>>(option(p)));
        if let Ok(Some(o)) = option {
            options.push(o);
        }
        if p.next().is_err() {
            break; // exhausted; else the comma
        }
    }
    // Stable: of two options of one resolution, the first.
    options.sort_by(|a, b| a.0.total_cmp(&b.0));
    let i = options
        .iter()
        .position(|(x, _)| *x >= 1.0)
        .or_else(|| options.len().checked_sub(1))?;
    options.swap_remove(i).1
}

/// One option: its resolution (dppx) and URL (none for a generated image, a gradient); `None`
/// when it is no option a browser would choose.
fn option(p: &mut Parser<'_>) -> Option<(f64, Option<String>)> {
    let mut url = None;
    let mut generated = false;
    let mut resolution = 1.0;
    let mut usable = true;
    while let Ok(token) = p.next() {
        match token.clone() {
            Token::UnquotedUrl(u) | Token::QuotedString(u) if url.is_none() => {
                url = Some(u.to_string())
            }
            Token::Function(name)
                if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") =>
            {
                let inner = p.parse_nested_block(|p| {
                    Ok::<_, ParseError<()>>(match p.next() {
                        Ok(Token::QuotedString(u)) => Some(u.to_string()),
                        _ => None,
                    })
                });
                url = url.or(inner.ok().flatten());
            }
            Token::Function(name) if name.eq_ignore_ascii_case("type") => {
                let known = p.parse_nested_block(|p| {
                    Ok::<_, ParseError<()>>(
                        matches!(p.next(), Ok(Token::QuotedString(t)) if decodable(t)),
                    )
                });
                usable &= known.unwrap_or(false);
            }
            Token::Dimension { value, unit, .. } => {
                let value = f64::from(value);
                resolution = match unit.to_ascii_lowercase().as_str() {
                    "x" | "dppx" => value,
                    "dpi" => value / 96.0,
                    "dpcm" => value * 2.54 / 96.0,
                    _ => return None,
                };
            }
            // An image made, not fetched: chosen as any other option.
            Token::Function(name) if url.is_none() && !generated && generates(&name) => {
                generated = true;
                let _ = p.parse_nested_block(|p| {
                    while p.next().is_ok() {}
                    Ok::<_, ParseError<()>>(())
                });
            }
            // Anything else (an image-set within, junk): no option.
            _ => return None,
        }
    }
    if !usable || resolution <= 0.0 || (url.is_none() && !generated) {
        return None;
    }
    Some((resolution, url))
}

/// Whether a function of this name makes an image from no URL (CSS Images' gradients and their
/// prefixed forms).
fn generates(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.strip_prefix("-webkit-").unwrap_or(&name);
    let name = name.strip_prefix("repeating-").unwrap_or(name);
    matches!(
        name,
        "linear-gradient" | "radial-gradient" | "conic-gradient"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picked(args: &str) -> Option<String> {
        pick(&mut Parser::new(args))
    }

    #[test]
    fn the_option_at_the_lowest_resolution_not_below_1x() {
        assert_eq!(picked(r#""a.png" 1x"#).as_deref(), Some("a.png"));
        assert_eq!(
            picked("url(b.png) 1x, url(c.png) 2x").as_deref(),
            Some("b.png")
        );
        assert_eq!(
            picked("url(c.png) 2x, url(b.png) 1x").as_deref(),
            Some("b.png")
        );
        assert_eq!(
            picked(r#"url("h.png") 2dppx, "l.png" 0.5x"#).as_deref(),
            Some("h.png")
        );
        assert_eq!(
            picked(r#""l.png" 48dpi, "m.png" 72dpi"#).as_deref(),
            Some("m.png")
        );
        assert_eq!(picked(r#""none.png""#).as_deref(), Some("none.png"));
    }

    #[test]
    fn options_a_browser_cannot_use_are_passed_over() {
        let typed = r#""a.jxl" type("image/jxl") 1x, "a.png" type("image/png") 1x"#;
        assert_eq!(picked(typed).as_deref(), Some("a.png"));
        // A gradient is an option like any other: chosen at 1x, nothing is fetched.
        let gradient = r#"linear-gradient(red, blue) 1x, "g.png" 2x"#;
        assert_eq!(picked(gradient), None);
        let gradient = r#"repeating-radial-gradient(red, blue) 2x, "g.png" 1x"#;
        assert_eq!(picked(gradient).as_deref(), Some("g.png"));
        assert_eq!(picked("junk 1x"), None);
        assert_eq!(picked(""), None);
    }
}
