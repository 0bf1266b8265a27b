//! Durations on the command line: numbers with units (`500ms`, `10s`, `2m`, `1h`, `1.5s`), or
//! several of them in a row as Go, k6 and hey write them (`1m30s`, `1h2m`).
//!
//! One rule for every duration flag of `bench`, `run`, `lab`, `compare` and `discover`
//! ([`parse_or_seconds`]): a bare number is seconds, as wrk, hey, ab and h2load read their run
//! lengths and timeouts (`-d 3`, `--timeout 2`); a timeout or run length of 0 is refused however
//! it is written ([`positive`]). Two knobs far below a second refuse a bare number instead, with
//! the unit they are written in as the hint: `--busy-poll` (microseconds) and `lab --rtt`
//! (milliseconds; `0` is taken), where a number read as seconds would be off a thousand times or
//! more. `serve` keeps the strict [`parse`]: a config's wall time or timeout 60 times too long or
//! too short is worse than an error.

use std::time::Duration;

const UNITS: &str = "units: us, ms, s, m, h; e.g. 500ms, 30s, 1m30s";

pub fn parse(text: &str) -> Result<Duration, String> {
    parse_hinting(text, "s")
}

/// As [`parse`]; a bare number is refused with `unit` after it as the hint (`us` for a knob of
/// microseconds, where `5s` would be a million times too long).
pub fn parse_hinting(text: &str, unit: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("no duration given ({UNITS})"));
    }
    if text.parse::<f64>().is_ok() {
        return Err(format!(
            "`{text}` has no unit: write e.g. `{text}{unit}` ({UNITS})"
        ));
    }
    let mut secs = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("`{text}`: `{number}` is not a number ({UNITS})"))?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let scale = match unit {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("`{text}`: `{number}` has no unit ({UNITS})")),
            _ => return Err(format!("`{text}`: unknown unit `{unit}` ({UNITS})")),
        };
        secs += value * scale;
        rest = next;
    }
    if !secs.is_finite() || secs > 1e9 {
        return Err(out_of_range(text));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The rule of `bench`, `run`, `lab` and `compare`: as [`parse`], and a bare number is seconds.
pub fn parse_or_seconds(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && (0.0..=1e9).contains(&secs) => {
            Ok(Duration::from_secs_f64(secs))
        }
        Ok(_) => Err(out_of_range(text)),
        Err(_) => parse(text),
    }
}

/// A run length or timeout: as [`parse_or_seconds`], and 0 (`0`, `0s`) refused, where hey's
/// `-t 0` would mean no timeout at all.
pub fn positive(text: &str) -> Result<Duration, String> {
    match parse_or_seconds(text)? {
        d if d.is_zero() => Err("must be longer than 0".into()),
        d => Ok(d),
    }
}

/// The error of a duration written as one and too long (or negative): past 1e9 s.
fn out_of_range(text: &str) -> String {
    format!("`{text}` is out of range (at most 1000000000 s)")
}

/// Whether `text` is written as a run length, in range or not: `-d 400000h` is a run length too
/// long, not a request body.
pub fn is_written_as_run_length(text: &str) -> bool {
    match parse_or_seconds(text) {
        Ok(_) => true,
        Err(e) => e == out_of_range(text.trim()) || e == out_of_range(text),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, parse_hinting, parse_or_seconds};
    use std::time::Duration;

    #[test]
    fn units_scale_as_written() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn several_units_add_up_as_go_and_k6_write_them() {
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h2m3s"), Ok(Duration::from_secs(3723)));
        assert_eq!(parse("1s500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse("1m30").unwrap_err().contains("`30` has no unit"));
    }

    #[test]
    fn bare_numbers_and_unknown_units_are_refused() {
        assert!(parse("10").unwrap_err().contains("write e.g. `10s`"));
        assert!(parse_hinting("5", "us")
            .unwrap_err()
            .contains("write e.g. `5us`"));
        assert!(parse("10x").unwrap_err().contains("unknown unit"));
        assert!(parse("s").is_err());
        assert!(parse("1.2.3s").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn a_bare_number_is_seconds_in_the_load_flags() {
        assert_eq!(parse_or_seconds("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_or_seconds("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_or_seconds("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_or_seconds("-3").is_err());
        assert!(parse_or_seconds("3x").is_err());
    }

    #[test]
    fn a_run_length_too_long_is_still_written_as_one() {
        for long in ["400000h", "2000000000", "1e10"] {
            assert!(parse_or_seconds(long).unwrap_err().contains("out of range"));
            assert!(super::is_written_as_run_length(long), "{long}");
        }
        assert!(super::is_written_as_run_length("30s"));
        for body in ["a=b", "{\"k\":1}", "3x", ""] {
            assert!(!super::is_written_as_run_length(body), "{body}");
        }
    }
}
