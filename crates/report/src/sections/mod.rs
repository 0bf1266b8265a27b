//! The sections of the page, in reading order: the headline numbers first, then the pictures
//! that explain them, then the detail tables, then the disclosure of what ran where.

mod dynamic;
mod hosts;
mod https;
mod lab;
mod lab_rows;
mod latency;
mod page;
mod provenance;
mod run;
mod summary;
mod tls;
mod truss;
mod webstone;

use crate::html::Page;
use crate::input::{Doc, Input};
use results::{BenchResult, CompareResult, LabResult};

/// The whole page for classified inputs.
pub fn page(inputs: &[Input<'_>]) -> String {
    let mut p = Page::default();
    let c = summary::render(&mut p, inputs);
    p.section("summary", "Summary", c);
    let c = run::render(inputs);
    p.section("runs", "Load, statuses, errors and URLs", c);
    let c = latency::spectrum(&mut p, inputs);
    p.section("spectrum", "Latency percentile spectrum", c);
    let c = latency::over_time(&mut p, inputs);
    p.section("timeseries", "Throughput and latency over time", c);
    let c = hosts::render(&mut p, inputs);
    p.section("hosts", "Client hosts", c);
    let c = lab::sizes(&mut p, inputs);
    p.section("sizes", "Bandwidth against file size", c);
    let c = lab::syscalls(&mut p, inputs);
    p.section("syscalls", "System calls per request", c);
    let c = page::render(&mut p, inputs);
    p.section(
        "page",
        "The page: time, round trips, packets and bytes (flint lab syscalls)",
        c,
    );
    let c = tls::render(&mut p, inputs);
    p.section("tls", "Over HTTPS (flint lab tls)", c);
    let c = dynamic::render(inputs);
    p.section(
        "dynamic",
        "CGI and FastCGI against a static file, CPU per tier (flint lab dynamic)",
        c,
    );
    let c = lab::others(inputs);
    p.section("lab-other", "Other lab results", c);
    let c = webstone::pages(inputs);
    p.section("pages", "Pages (WebSTONE)", c);
    let c = truss::render(inputs);
    p.section("truss", "System call profiles", c);
    let c = provenance::render(inputs);
    p.section("provenance", "What ran where", c);
    let heads: Vec<(&str, &str)> = inputs.iter().map(|i| (i.file, i.kind().name())).collect();
    p.finish(&heads)
}

/// A series name: `name` alone when only one input of this kind is on the page, else prefixed
/// with the input's label so two lab files' "nginx" lines stay apart.
fn series_name(inputs: &[Input<'_>], input: &Input<'_>, name: &str) -> String {
    if inputs.iter().filter(|i| i.kind() == input.kind()).count() > 1 {
        format!("{} · {name}", input.label)
    } else {
        name.to_owned()
    }
}

/// The bench results among the inputs, each with its input (for its label).
fn benches<'i, 'a>(
    inputs: &'i [Input<'a>],
) -> impl Iterator<Item = (&'i Input<'a>, &'i BenchResult)> {
    inputs.iter().filter_map(|i| match &i.doc {
        Doc::Bench(b) => Some((i, b.as_ref())),
        _ => None,
    })
}

/// The compare results among the inputs.
fn compares<'i, 'a>(
    inputs: &'i [Input<'a>],
) -> impl Iterator<Item = (&'i Input<'a>, &'i CompareResult)> {
    inputs.iter().filter_map(|i| match &i.doc {
        Doc::Compare(c) => Some((i, c)),
        _ => None,
    })
}

/// The lab results among the inputs.
fn labs<'i, 'a>(inputs: &'i [Input<'a>]) -> impl Iterator<Item = (&'i Input<'a>, &'i LabResult)> {
    inputs.iter().filter_map(|i| match &i.doc {
        Doc::Lab(l) => Some((i, l)),
        _ => None,
    })
}
