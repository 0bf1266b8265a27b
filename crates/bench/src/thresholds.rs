//! Pass/fail conditions on a run's figures, written as k6 users write them: `p99<50ms`,
//! `error_rate<1%`, `rps>10000`, `p99.9(page)<200ms`.
//!
//! A threshold is parsed before the run starts (so a typo costs nothing) and evaluated on the
//! merged result, from the same histograms and counters the reports print: the value a threshold
//! judges is the value the summary shows. Latencies are the run's primary figures: in the open
//! loop those count from each request's intended start, as the summary's do.

use crate::report::formulas::{per_second, ratio};
use crate::stats::{ErrorKind, Latency};
use crate::RunResult;
use std::fmt;
use std::str::FromStr;

/// Why an expression is not a threshold; each message names the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    /// No `<`, `<=`, `>`, `>=` or `==` in it (a lone `=` is none); holds the expression.
    #[error("threshold `{0}`: no comparison (write e.g. `p99<50ms`, `error_rate<1%`, `rps>1000`)")]
    NoOperator(String),
    /// Left of the comparison is not one of [`METRICS`].
    #[error("threshold `{expr}`: unknown metric `{metric}` (metrics: {METRICS})")]
    UnknownMetric {
        /// The expression as written.
        expr: String,
        /// What stood left of the comparison.
        metric: String,
    },
    /// Right of the comparison is not a value of the metric's unit.
    #[error("threshold `{expr}`: {reason}")]
    BadValue {
        /// The expression as written.
        expr: String,
        /// What is wrong with the value.
        reason: String,
    },
}

/// What the metrics are, for error messages and `--help`.
pub const METRICS: &str = "pN (p50, p99, p99.9), mean, min, max, each of connect, ttfb, \
    response (the default) or page, as p99(page); error_rate, errors, errors(KIND) (one kind, \
    as check_body), rps, pages_per_s";

/// Which latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyKind {
    /// `connect`: a request's TCP connect, when it opened a connection (TLS apart).
    Connect,
    /// `ttfb`: the request written (open loop: its intended start) to its response's first byte.
    Ttfb,
    /// `response`, the default: the request's start (open loop: intended) to its response's
    /// last byte, a connect it opened included.
    Response,
    /// `page`: a page's first file's start to its last file's end.
    Page,
}

impl LatencyKind {
    /// The name a threshold writes in parentheses (`p99(ttfb)`).
    pub fn name(self) -> &'static str {
        match self {
            LatencyKind::Connect => "connect",
            LatencyKind::Ttfb => "ttfb",
            LatencyKind::Response => "response",
            LatencyKind::Page => "page",
        }
    }
}

/// Which figure of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyStat {
    /// A percentile, 0 to 100.
    Percentile(f64),
    /// `mean` or `avg`.
    Mean,
    /// `min`: the fastest.
    Min,
    /// `max`: the slowest.
    Max,
}

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// In milliseconds.
    Latency(LatencyStat, LatencyKind),
    /// Failed requests / requests attempted (a fraction; printed in percent).
    ErrorRate,
    /// Failed requests, all kinds.
    Errors,
    /// Failed requests of one kind (`errors(check_body)`).
    ErrorsOf(ErrorKind),
    /// Complete responses per second of the measured window.
    RequestsPerS,
    /// Pages completed per second of the measured window (`pages_per_s`, `pps`).
    PagesPerS,
}

/// The comparison between the run's figure and the limit: the figure stands left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`: exact, for counts (`errors==0`).
    Eq,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
            Op::Eq => value == limit,
        }
    }
}

/// One `--threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As the user wrote it.
    pub expr: String,
    /// What it judges.
    pub metric: Metric,
    /// How the run's figure must compare with `limit`.
    pub op: Op,
    /// In the metric's unit (ms for latencies, a fraction for the error rate).
    pub limit: f64,
}

/// A threshold judged on a result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// As the user wrote it.
    pub expression: String,
    /// The metric's canonical name (`p99(response)`, `error_rate`, ...).
    pub metric: String,
    /// What the run measured, in `unit`; None when it measured nothing of that kind (then the
    /// threshold fails: nothing shows it holds).
    pub value: Option<f64>,
    /// The threshold's limit, in `unit` (`error_rate<1%`: 0.01).
    pub limit: f64,
    /// `ms`, `fraction`, `errors`, `requests/s` or `pages/s` ([`Metric::unit`]).
    pub unit: &'static str,
    /// Whether the value compares with the limit as asked (false without a value).
    pub pass: bool,
}

impl Metric {
    /// The canonical name, whatever spelling the threshold used: `p99(response)` for `p99`,
    /// `rps` for `requests_per_s`, `pages_per_s` for `pps`.
    pub fn name(&self) -> String {
        match self {
            Metric::Latency(stat, kind) => {
                let stat = match stat {
                    LatencyStat::Percentile(p) => format!("p{p}"),
                    LatencyStat::Mean => "mean".into(),
                    LatencyStat::Min => "min".into(),
                    LatencyStat::Max => "max".into(),
                };
                format!("{stat}({})", kind.name())
            }
            Metric::ErrorRate => "error_rate".into(),
            Metric::Errors => "errors".into(),
            Metric::ErrorsOf(kind) => format!("errors({})", kind.name()),
            Metric::RequestsPerS => "rps".into(),
            Metric::PagesPerS => "pages_per_s".into(),
        }
    }

    /// The unit of its value and limit: `ms`, `fraction`, `errors`, `requests/s`, `pages/s`.
    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Latency(..) => "ms",
            Metric::ErrorRate => "fraction",
            Metric::Errors | Metric::ErrorsOf(_) => "errors",
            Metric::RequestsPerS => "requests/s",
            Metric::PagesPerS => "pages/s",
        }
    }

    /// The figure in `r`, in [`Metric::unit`]; None if the run has no data for it.
    pub fn value(&self, r: &RunResult) -> Option<f64> {
        let s = &r.stats;
        let secs = r.duration.as_secs_f64();
        match *self {
            Metric::Latency(stat, kind) => {
                let latency: &Latency = match kind {
                    LatencyKind::Connect => &s.connect,
                    LatencyKind::Ttfb => &s.ttfb,
                    LatencyKind::Response => &s.response,
                    LatencyKind::Page => &s.page,
                };
                let h = latency.histogram();
                if h.is_empty() {
                    return None;
                }
                let us = match stat {
                    LatencyStat::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
                    LatencyStat::Mean => h.mean(),
                    LatencyStat::Min => h.min() as f64,
                    LatencyStat::Max => h.max() as f64,
                };
                Some(us / 1000.0)
            }
            Metric::ErrorRate => {
                let attempts = s.attempts();
                (attempts > 0).then(|| ratio(s.errors.total() as f64, attempts as f64))
            }
            Metric::Errors => Some(s.errors.total() as f64),
            Metric::ErrorsOf(kind) => Some(s.errors.get(kind) as f64),
            Metric::RequestsPerS => Some(per_second(s.requests, secs)),
            Metric::PagesPerS => Some(per_second(s.pages_done, secs)),
        }
    }
}

impl Threshold {
    /// This threshold held against the merged result `r`: the figure the summary shows.
    pub fn judge(&self, r: &RunResult) -> Verdict {
        let value = self.metric.value(r);
        Verdict {
            expression: self.expr.clone(),
            metric: self.metric.name(),
            value,
            limit: self.limit,
            unit: self.metric.unit(),
            pass: value.is_some_and(|v| self.op.holds(v, self.limit)),
        }
    }
}

impl fmt::Display for Verdict {
    /// `ok    p99<50ms      p99(response) = 1.234 ms`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = if self.pass { "ok" } else { "FAIL" };
        let value = match (self.value, self.unit) {
            (None, _) => "no measurements".to_owned(),
            (Some(v), "fraction") => format!("{:.3} %", v * 100.0),
            (Some(v), "ms") => format!("{v:.3} ms"),
            (Some(v), "errors") => format!("{v:.0}"),
            (Some(v), unit) => format!("{v:.1} {unit}"),
        };
        write!(
            f,
            "{status:<5} {:<24} {} = {value}",
            self.expression, self.metric
        )
    }
}

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(expr: &str) -> Result<Self, Self::Err> {
        let text: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
        let (at, op, len) =
            find_op(&text).ok_or_else(|| ThresholdError::NoOperator(expr.into()))?;
        let (left, right) = (&text[..at], &text[at + len..]);
        let metric = parse_metric(&left.to_ascii_lowercase()).ok_or_else(|| {
            ThresholdError::UnknownMetric {
                expr: expr.into(),
                metric: left.into(),
            }
        })?;
        let bad = |reason: String| ThresholdError::BadValue {
            expr: expr.into(),
            reason,
        };
        let limit = match metric {
            Metric::Latency(..) => parse_ms(right).map_err(bad)?,
            Metric::ErrorRate => parse_fraction(right).map_err(bad)?,
            _ => parse_number(right).map_err(bad)?,
        };
        Ok(Threshold {
            expr: expr.trim().into(),
            metric,
            op,
            limit,
        })
    }
}

/// The first comparison operator: its byte offset, the operator, its length.
fn find_op(text: &str) -> Option<(usize, Op, usize)> {
    let at = text.find(['<', '>', '='])?;
    let rest = &text[at..];
    let two = |s: &str| rest.starts_with(s);
    Some(if two("<=") {
        (at, Op::Le, 2)
    } else if two(">=") {
        (at, Op::Ge, 2)
    } else if two("==") {
        (at, Op::Eq, 2)
    } else if two("<") {
        (at, Op::Lt, 1)
    } else if two(">") {
        (at, Op::Gt, 1)
    } else {
        return None; // a lone `=`
    })
}

fn parse_metric(name: &str) -> Option<Metric> {
    match name {
        "error_rate" => return Some(Metric::ErrorRate),
        "errors" => return Some(Metric::Errors),
        "rps" | "requests_per_s" => return Some(Metric::RequestsPerS),
        "pages_per_s" | "pps" => return Some(Metric::PagesPerS),
        _ => {}
    }
    if let Some(kind) = name
        .strip_prefix("errors(")
        .and_then(|n| n.strip_suffix(')'))
    {
        let kind = ErrorKind::ALL.into_iter().find(|k| k.name() == kind)?;
        return Some(Metric::ErrorsOf(kind));
    }
    // `STAT` or `STAT(KIND)`; k6's `p(95)` is a percentile too.
    let (stat, kind) = match name.strip_suffix(')').and_then(|n| n.rsplit_once('(')) {
        Some((stat, kind)) if !stat.is_empty() && stat != "p" => (stat, Some(kind)),
        _ => (name, None),
    };
    let kind = match kind {
        None | Some("response") => LatencyKind::Response,
        Some("connect") => LatencyKind::Connect,
        Some("ttfb") => LatencyKind::Ttfb,
        Some("page") => LatencyKind::Page,
        Some(_) => return None,
    };
    let stat = match stat {
        "mean" | "avg" => LatencyStat::Mean,
        "min" => LatencyStat::Min,
        "max" => LatencyStat::Max,
        "med" | "median" => LatencyStat::Percentile(50.0),
        _ => {
            let digits = stat.strip_prefix('p')?;
            let digits = digits
                .strip_prefix('(')
                .and_then(|d| d.strip_suffix(')'))
                .unwrap_or(digits);
            if !digits.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let p: f64 = digits.parse().ok()?;
            if !(0.0..=100.0).contains(&p) {
                return None;
            }
            LatencyStat::Percentile(p)
        }
    };
    Some(Metric::Latency(stat, kind))
}

fn parse_number(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("`{text}` is not a number"))
}

/// `1%` or a fraction `0.01`.
fn parse_fraction(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (text, 1.0),
    };
    let v = parse_number(number)? * scale;
    if v > 1.0 {
        return Err(format!("`{text}` is more than 100%"));
    }
    Ok(v)
}

/// A latency (`50ms`, `1.5s`, `200us`) in milliseconds. A bare number is milliseconds, as k6
/// reads `p(95)<200` (its latencies are in ms), so a threshold copied from a k6 script means
/// here what it meant there.
fn parse_ms(text: &str) -> Result<f64, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "us" | "µs" => 1e-3,
        "" | "ms" => 1.0,
        "s" => 1e3,
        "m" | "min" => 60e3,
        _ => return Err(format!("unknown unit `{unit}` (units: us, ms, s)")),
    };
    Ok(parse_number(number)? * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Threshold {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn the_forms_k6_users_write_parse() {
        let t = parse("p99<50ms");
        assert_eq!(
            t.metric,
            Metric::Latency(LatencyStat::Percentile(99.0), LatencyKind::Response)
        );
        assert_eq!((t.op, t.limit), (Op::Lt, 50.0));
        let t = parse("p99.9(page) < 200ms");
        assert_eq!(
            t.metric,
            Metric::Latency(LatencyStat::Percentile(99.9), LatencyKind::Page)
        );
        assert_eq!(t.expr, "p99.9(page) < 200ms");
        assert_eq!(parse("p(95)<1s").limit, 1000.0);
        assert_eq!(
            parse("mean(ttfb)<=250us").metric,
            Metric::Latency(LatencyStat::Mean, LatencyKind::Ttfb)
        );
        assert_eq!(
            parse("max(connect)<1s").metric,
            Metric::Latency(LatencyStat::Max, LatencyKind::Connect)
        );
        let t = parse("error_rate<1%");
        assert_eq!(t.metric, Metric::ErrorRate);
        assert!((t.limit - 0.01).abs() < 1e-12);
        assert!((parse("error_rate<0.05").limit - 0.05).abs() < 1e-12);
        let t = parse("rps>10000");
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::RequestsPerS, Op::Gt, 10000.0)
        );
        assert_eq!(parse("pages_per_s>=5").op, Op::Ge);
        assert_eq!(parse("errors==0").op, Op::Eq);
        let t = parse("errors(check_body)<1");
        assert_eq!(t.metric, Metric::ErrorsOf(ErrorKind::CheckBody));
        assert_eq!(t.metric.name(), "errors(check_body)");
    }

    #[test]
    fn errors_name_the_expression_and_what_is_wrong() {
        let err = |s: &str| s.parse::<Threshold>().unwrap_err().to_string();
        let e = err("p99 50ms");
        assert!(
            e.contains("`p99 50ms`") && e.contains("no comparison"),
            "{e}"
        );
        assert_eq!(parse("p(95)<200").limit, 200.0, "k6: a bare latency is ms");
        assert_eq!(parse("p99<1.5").limit, 1.5);
        let e = err("latency<50ms");
        assert!(e.contains("unknown metric `latency`"), "{e}");
        assert!(err("p101<1s").contains("unknown metric"));
        assert!(err("p99(body)<1s").contains("unknown metric"));
        assert!(err("errors(check_nothing)<1").contains("unknown metric"));
        assert!(err("error_rate<150%").contains("more than 100%"));
        assert!(err("rps>lots").contains("not a number"));
        assert!(err("p99<5parsecs").contains("unknown unit"));
        assert!(err("rps=5").contains("no comparison"));
    }

    #[test]
    fn comparisons_hold_as_written() {
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Le.holds(2.1, 2.0));
        assert!(Op::Gt.holds(3.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Ge.holds(1.9, 2.0));
        assert!(Op::Eq.holds(0.0, 0.0) && !Op::Eq.holds(1.0, 0.0));
    }

    #[test]
    fn verdicts_print_the_measured_value_in_its_unit() {
        let v = Verdict {
            expression: "error_rate<1%".into(),
            metric: "error_rate".into(),
            value: Some(0.032),
            limit: 0.01,
            unit: "fraction",
            pass: false,
        };
        let line = v.to_string();
        assert!(
            line.starts_with("FAIL") && line.ends_with("error_rate = 3.200 %"),
            "{line}"
        );
        let v = Verdict {
            value: None,
            pass: false,
            ..v
        };
        assert!(v.to_string().ends_with("no measurements"));
    }
}
