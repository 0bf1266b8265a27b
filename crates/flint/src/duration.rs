//! Durations on the command line: a number and a unit (`500ms`, `10s`, `2m`, `1h`, `1.5s`).
//!
//! A bare number is refused: `-d 10` could mean seconds or minutes (WebSTONE's `-t` was minutes),
//! and a benchmark that ran 60 times too long or too short is worse than an error.

use std::time::Duration;

pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| {
            format!("`{text}` has no unit: write e.g. `{text}s` (units: us, ms, s, m, h)")
        })?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}`: `{number}` is not a number"))?;
    let scale = match unit {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` (units: us, ms, s, m, h)"
            ))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::parse;
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
    fn bare_numbers_and_unknown_units_are_refused() {
        assert!(parse("10").unwrap_err().contains("no unit"));
        assert!(parse("10x").unwrap_err().contains("unknown unit"));
        assert!(parse("s").is_err());
        assert!(parse("1.2.3s").is_err());
    }
}
