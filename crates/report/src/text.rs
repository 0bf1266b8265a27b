//! Text that goes into the page: escaping and number formatting.
//!
//! Every string that comes from an input (file names, server names, URLs, error messages, option
//! values) reaches the page through [`esc`], in HTML and in SVG alike: a result file is data, and
//! a server that calls itself `<script>` must not run anything in the reader's browser.
//! Numbers are formatted for reading, not for round trips: the JSON keeps the exact values.

use std::fmt::Write;

/// Escapes text for HTML element content and for double- or single-quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters have no business in a report and some are invalid in XML (SVG).
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Groups the digits of a non-negative integer part in thousands: `1234567` → `1,234,567`.
fn group(int: u64) -> String {
    let digits = int.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number for a table cell: enough digits to compare, not more. `–` for non-finite values.
///
/// ≥ 100: integer with thousands separators; ≥ 10: one decimal; ≥ 1: two; below: three
/// significant digits.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let a = x.abs();
    let body = if a >= 99.95 {
        group(a.round() as u64)
    } else if a >= 9.995 {
        format!("{a:.1}")
    } else if a >= 0.9995 {
        format!("{a:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 9) as usize;
        format!("{a:.decimals$}")
    };
    format!("{sign}{body}")
}

/// `num` of an optional value; `–` when absent.
pub fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), num)
}

/// An integer count with thousands separators.
pub fn count(x: f64) -> String {
    if x.is_finite() && x >= 0.0 {
        group(x.round() as u64)
    } else {
        num(x)
    }
}

/// Bytes in decimal units (1 kB = 1000 B), for axis ticks and sizes: `500 B`, `20 kB`, `1.5 MB`.
pub fn bytes(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = x;
    let mut unit = 0;
    while v.abs() >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    // Three significant digits: a size is for recognising, the JSON keeps the exact count.
    let decimals = if v.abs() >= 100.0 || v.fract().abs() < 1e-9 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    let mut out = String::new();
    let _ = write!(out, "{} {}", trim(&format!("{v:.decimals$}")), UNITS[unit]);
    out
}

/// A percentile spectrum tick: `nines` = -log10(1 - p), so 0 → `0%`, 1 → `90%`, 3 → `99.9%`.
pub fn nines(n: f64) -> String {
    if !n.is_finite() {
        return "–".into();
    }
    let p = 100.0 * (1.0 - 10f64.powf(-n));
    let decimals = (n.ceil() as i32 - 2).clamp(0, 9) as usize;
    format!("{}%", trim(&format!("{p:.decimals$}")))
}

/// Drops trailing zeros after a decimal point: `2.50` → `2.5`, `3.00` → `3`.
pub fn trim(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esc_neutralises_markup_and_quotes() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(esc("a\u{0}b"), "a\u{fffd}b");
    }

    #[test]
    fn num_keeps_digits_that_matter() {
        assert_eq!(num(50914.67), "50,915");
        assert_eq!(num(1234567.0), "1,234,567");
        assert_eq!(num(99.96), "100");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(0.2541), "0.254");
        assert_eq!(num(0.0012345), "0.00123");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-2.5), "-2.50");
        assert_eq!(num(f64::NAN), "–");
    }

    #[test]
    fn bytes_use_decimal_units() {
        assert_eq!(bytes(500.0), "500 B");
        assert_eq!(bytes(1000.0), "1 kB");
        assert_eq!(bytes(20_480.0), "20.5 kB");
        assert_eq!(bytes(40_960.0), "41 kB");
        assert_eq!(bytes(116_736.0), "117 kB");
        assert_eq!(bytes(1_500_000.0), "1.5 MB");
    }

    #[test]
    fn nines_label_the_spectrum_like_hdrhistogram() {
        assert_eq!(nines(0.0), "0%");
        assert_eq!(nines(1.0), "90%");
        assert_eq!(nines(2.0), "99%");
        assert_eq!(nines(3.0), "99.9%");
        assert_eq!(nines(5.0), "99.999%");
    }
}
