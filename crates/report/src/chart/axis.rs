//! Axes: a data range becomes a scale domain with "nice" ticks (1, 2, 5 × 10ⁿ on linear axes,
//! decades on log axes), so gridlines fall on numbers a reader can name.

use crate::text;

/// How values map to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Positions proportional to values.
    Linear,
    /// Base 10; values ≤ 0 cannot be placed and are dropped by the charts.
    Log,
}

/// How tick values are labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ticks {
    /// Plain numbers: `0`, `2,000`, `0.5`.
    Number,
    /// Byte sizes in decimal units: `1 kB`, `100 kB`.
    Bytes,
    /// A percentile spectrum's "nines" (-log10(1-p)): ticks at integers labelled `90%`, `99%`.
    Nines,
}

/// One axis of a chart: its title (with the unit) and how it scales and labels.
#[derive(Debug, Clone)]
pub struct Axis {
    /// What the axis shows, with its unit (`response time (ms, log scale)`).
    pub title: String,
    /// How values map to positions.
    pub scale: Scale,
    /// How tick values are labelled.
    pub ticks: Ticks,
    /// Linear axes only: the domain includes 0 (rates and latencies start at nothing).
    pub zero: bool,
}

impl Axis {
    /// A linear axis of plain numbers whose domain includes 0.
    pub fn linear(title: impl Into<String>) -> Self {
        Axis {
            title: title.into(),
            scale: Scale::Linear,
            ticks: Ticks::Number,
            zero: true,
        }
    }
    /// A base-10 log axis labelled as `ticks` says; its domain is the data's own (it cannot include
    /// 0).
    pub fn log(title: impl Into<String>, ticks: Ticks) -> Self {
        Axis {
            title: title.into(),
            scale: Scale::Log,
            ticks,
            zero: false,
        }
    }
    /// A percentile spectrum's axis: linear in nines (`-log10(1-p)`) from 0, ticks labelled `90%`,
    /// `99%`, `99.9%`.
    pub fn nines(title: impl Into<String>) -> Self {
        Axis {
            title: title.into(),
            scale: Scale::Linear,
            ticks: Ticks::Nines,
            zero: true,
        }
    }
    /// Leaves the domain at the data's own minimum (time axes that do not start at 0).
    pub fn not_from_zero(mut self) -> Self {
        self.zero = false;
        self
    }

    /// Whether a value can be placed on this axis.
    pub fn accepts(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }

    /// The domain and ticks for these values; `None` when none of them can be placed.
    pub fn domain(&self, values: impl IntoIterator<Item = f64>) -> Option<Domain> {
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|&v| self.accepts(v)) {
            min = min.min(v);
            max = max.max(v);
        }
        if min > max {
            return None;
        }
        Some(match self.scale {
            Scale::Linear => self.linear_domain(min, max),
            Scale::Log => self.log_domain(min, max),
        })
    }

    fn linear_domain(&self, mut min: f64, mut max: f64) -> Domain {
        if self.zero {
            min = min.min(0.0);
            max = max.max(0.0);
        }
        if max - min < f64::EPSILON * max.abs().max(1.0) {
            // A flat series: give it room so it is drawn mid-plot rather than on an edge.
            let pad = if max == 0.0 { 1.0 } else { max.abs() * 0.1 };
            if !(self.zero && min == 0.0) {
                min -= pad;
            }
            max += pad;
        }
        let step = match self.ticks {
            Ticks::Nines => nice_step((max - min) / 5.0).max(1.0),
            _ => nice_step((max - min) / 5.0),
        };
        let lo_i = (min / step + 1e-9).floor() as i64;
        let hi_i = (max / step - 1e-9).ceil() as i64;
        let ticks = (lo_i..=hi_i)
            .map(|i| {
                let v = i as f64 * step;
                Tick {
                    value: v,
                    label: Some(self.label(v, step)),
                }
            })
            .collect();
        Domain {
            scale: Scale::Linear,
            lo: lo_i as f64 * step,
            hi: hi_i as f64 * step,
            ticks,
        }
    }

    fn log_domain(&self, min: f64, max: f64) -> Domain {
        let lo = min.log10().floor() as i32;
        let mut hi = max.log10().ceil() as i32;
        if hi <= lo {
            hi = lo + 1;
        }
        let few = hi - lo <= 3;
        let mut ticks = Vec::new();
        for d in lo..=hi {
            let decade = 10f64.powi(d);
            ticks.push(Tick {
                value: decade,
                label: Some(self.label(decade, decade)),
            });
            if d < hi {
                for m in [2.0, 5.0] {
                    // Labelled only when there are few decades, else the labels would collide.
                    let v = decade * m;
                    ticks.push(Tick {
                        value: v,
                        label: few.then(|| self.label(v, decade)),
                    });
                }
            }
        }
        Domain {
            scale: Scale::Log,
            lo: f64::from(lo),
            hi: f64::from(hi),
            ticks,
        }
    }

    fn label(&self, v: f64, step: f64) -> String {
        match self.ticks {
            Ticks::Bytes => text::bytes(v),
            Ticks::Nines => text::nines(v),
            Ticks::Number => tick_number(v, step),
        }
    }

    /// A value as the tooltips show it, in this axis's terms.
    pub fn show(&self, v: f64) -> String {
        match self.ticks {
            Ticks::Bytes => text::bytes(v),
            Ticks::Nines => text::nines(v),
            Ticks::Number => text::num(v),
        }
    }
}

/// A tick: where, and its label (unlabelled ticks are minor gridlines).
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub label: Option<String>,
}

/// An axis fitted to data: `lo`..`hi` in scale space (log10 of the value on log axes).
#[derive(Debug, Clone)]
pub struct Domain {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<Tick>,
}

impl Domain {
    /// Where `v` falls, 0.0 at `lo` to 1.0 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        let s = match self.scale {
            Scale::Linear => v,
            Scale::Log => v.log10(),
        };
        if self.hi > self.lo {
            (s - self.lo) / (self.hi - self.lo)
        } else {
            0.5
        }
    }
}

/// The nice step (1, 2 or 5 × 10ⁿ) nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A tick label with just the decimals its step needs: step 0.2 → `0.4`, step 500 → `1,500`.
fn tick_number(v: f64, step: f64) -> String {
    let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
    if step >= 1.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        return format!("{sign}{}", text::count(v.abs()));
    }
    let decimals = (-step.log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(d: &Domain) -> Vec<String> {
        d.ticks.iter().filter_map(|t| t.label.clone()).collect()
    }

    #[test]
    fn linear_ticks_are_nice_and_cover_the_data() {
        let d = Axis::linear("y").domain([3.0, 47.0]).unwrap();
        assert_eq!(labels(&d), ["0", "10", "20", "30", "40", "50"]);
        assert_eq!((d.lo, d.hi), (0.0, 50.0));
        let d = Axis::linear("y").domain([0.0, 1.1]).unwrap();
        assert_eq!(labels(&d), ["0.0", "0.5", "1.0", "1.5"]);
        let d = Axis::linear("y").domain([48_000.0, 52_000.0]).unwrap();
        assert_eq!(labels(&d).last().unwrap(), "60,000");
    }

    #[test]
    fn flat_and_empty_data_still_get_a_domain_or_none() {
        let d = Axis::linear("y").domain([5.0, 5.0]).unwrap();
        assert!(d.lo == 0.0 && d.hi >= 5.0);
        let d = Axis::linear("t")
            .not_from_zero()
            .domain([5.0, 5.0])
            .unwrap();
        assert!(d.lo < 5.0 && d.hi > 5.0, "{d:?}");
        let d = Axis::linear("y").domain([0.0]).unwrap();
        assert!(d.hi > d.lo);
        assert!(Axis::linear("y").domain([f64::NAN]).is_none());
        assert!(Axis::log("x", Ticks::Bytes).domain([0.0, -1.0]).is_none());
    }

    #[test]
    fn log_ticks_fall_on_decades_with_byte_labels() {
        let d = Axis::log("size", Ticks::Bytes)
            .domain([500.0, 200_000.0])
            .unwrap();
        assert_eq!((d.lo, d.hi), (2.0, 6.0));
        let l = labels(&d);
        assert_eq!(l, ["100 B", "1 kB", "10 kB", "100 kB", "1 MB"]);
        assert!((d.frac(10_000.0) - 0.5).abs() < 1e-12);
        let d = Axis::log("size", Ticks::Bytes)
            .domain([500.0, 20_000.0])
            .unwrap();
        assert!(labels(&d).contains(&"2 kB".to_string()));
    }

    #[test]
    fn nines_axis_ticks_at_whole_nines() {
        let d = Axis::nines("p").domain([0.0, 3.4]).unwrap();
        assert_eq!(labels(&d), ["0%", "90%", "99%", "99.9%", "99.99%"]);
    }
}
