//! The page around the sections: head, inline CSS, table of contents, tables, the check script.
//!
//! Everything is inline so the file can be mailed, archived or opened offline. The one script is
//! static (nothing from the inputs goes into it) and optional: it only checks, after load, that
//! every chart drew the points it says it has, and records the verdict in `data-ok` on `<body>`
//! for the browser test. Tooltips are SVG `<title>`s, which need no script.

use crate::text::esc;
use std::fmt::Write;

/// A table column: its heading and whether it holds numbers (right-aligned, tabular digits).
pub struct Col<'a>(pub &'a str, pub bool);

/// A table from headings and rows of cells that are already HTML (escaped by the caller).
pub fn table(cols: &[Col<'_>], rows: &[Vec<String>], class: &str) -> String {
    grouped_table(&[], cols, rows, class)
}

/// A table with a first heading row of groups, each spanning that many columns (a group with
/// an empty name spans columns that have no group, such as the row labels).
pub fn grouped_table(
    groups: &[(&str, usize)],
    cols: &[Col<'_>],
    rows: &[Vec<String>],
    class: &str,
) -> String {
    let mut out = format!(r#"<div class="tw"><table class="{class}"><thead>"#);
    if !groups.is_empty() {
        out.push_str(r#"<tr class="groups">"#);
        for (name, span) in groups {
            let _ = write!(out, r#"<th colspan="{span}">{}</th>"#, esc(name));
        }
        out.push_str("</tr>");
    }
    out.push_str("<tr>");
    for c in cols {
        let _ = write!(out, "<th{}>{}</th>", num_class(c.1), esc(c.0));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = match cols.get(i).is_some_and(|c| c.1) {
                true => num_class(true),
                false if has_long_word(cell) => r#" class="w""#,
                false => "",
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// The longest run of visible characters without a space (a URL, a path, a cipher suite's
/// name) that a cell may keep unbroken; past it the cell is long text, marked `w`.
const LONG_WORD: usize = 18;

/// Whether the cell's visible text (markup skipped) has a word longer than [`LONG_WORD`]: only
/// such a cell may break inside a word. Letting every cell do so made the browser squeeze short
/// labels to a few letters a line (`persis|tent`) while a wide table looked for room.
fn has_long_word(cell: &str) -> bool {
    let (mut in_tag, mut run) = (false, 0);
    for c in cell.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() => run = 0,
            _ => {
                run += 1;
                if run > LONG_WORD {
                    return true;
                }
            }
        }
    }
    false
}

fn num_class(num: bool) -> &'static str {
    if num {
        r#" class="n""#
    } else {
        ""
    }
}

/// The page being built: sections in order, and the ids handed to charts.
#[derive(Default)]
pub struct Page {
    sections: Vec<(String, String, String)>,
    charts: usize,
}

impl Page {
    /// A fresh, page-unique chart id (SVG pattern ids must be unique in the document).
    pub fn chart_id(&mut self) -> String {
        self.charts += 1;
        format!("chart-{}", self.charts)
    }

    /// Adds a section; empty content adds nothing.
    pub fn section(&mut self, id: &str, title: &str, content: String) {
        if !content.is_empty() {
            self.sections
                .push((id.to_owned(), title.to_owned(), content));
        }
    }

    /// The whole document. `inputs` lists (file, kind) for the header.
    pub fn finish(self, inputs: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(64 * 1024);
        let names: Vec<&str> = inputs.iter().map(|i| i.0).collect();
        let _ = write!(
            out,
            r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="generator" content="flint report {ver}"><title>flint report: {title}</title><style>{CSS}</style></head><body><header><h1>flint report</h1><p class="inputs">"#,
            ver = env!("CARGO_PKG_VERSION"),
            title = esc(&names.join(", ")),
        );
        for (i, (file, kind)) in inputs.iter().enumerate() {
            if i > 0 {
                out.push_str(" · ");
            }
            let _ = write!(
                out,
                r#"<span class="file">{}</span> <span class="kind">{}</span>"#,
                esc(file),
                esc(kind)
            );
        }
        out.push_str("</p><nav><ol>");
        for (id, title, _) in &self.sections {
            let _ = write!(out, r##"<li><a href="#{id}">{}</a></li>"##, esc(title));
        }
        out.push_str("</ol></nav></header><main>");
        for (id, title, content) in &self.sections {
            let _ = write!(
                out,
                r#"<section id="{id}"><h2>{}</h2>{content}</section>"#,
                esc(title)
            );
        }
        let _ = write!(
            out,
            r#"</main><footer>Made by flint report {} from the result files above. MB = 10<sup>6</sup> bytes. Charts: hover a point for its values.</footer><script>{CHECK_JS}</script></body></html>"#,
            env!("CARGO_PKG_VERSION")
        );
        out
    }
}

/// A figure holding one or more charts side by side, with an optional caption.
pub fn figures(svgs: &[String], caption: &str) -> String {
    if svgs.is_empty() {
        return String::new();
    }
    let mut out = String::from(r#"<div class="figs">"#);
    for s in svgs {
        let _ = write!(out, "<figure>{s}</figure>");
    }
    out.push_str("</div>");
    if !caption.is_empty() {
        let _ = write!(out, r#"<p class="cap">{caption}</p>"#);
    }
    out
}

const CSS: &str = r#"
:root{--ink:#1d1d1f;--mute:#5f6368;--line:#dcdfe3;--soft:#f5f6f8;--accent:#0072B2}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0 auto;max-width:1180px;padding:28px 32px 40px;color:var(--ink);background:#fff;
 font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans",Arial,sans-serif}
h1{font-size:28px;margin:0 0 4px;letter-spacing:-.01em}
h2{font-size:20px;margin:36px 0 10px;padding-top:10px;border-top:2px solid var(--ink)}
h3{font-size:16px;margin:22px 0 8px}
p{margin:6px 0 10px}
.inputs{color:var(--mute);margin:0 0 10px}
.file{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Liberation Mono",monospace;color:var(--ink);font-size:14px}
.kind{display:inline-block;font-size:11px;text-transform:uppercase;letter-spacing:.06em;border:1px solid var(--line);border-radius:3px;padding:0 5px;color:var(--mute)}
nav ol{display:flex;flex-wrap:wrap;gap:4px 18px;list-style:none;padding:0;margin:8px 0 0;font-size:14px}
nav a{color:var(--accent);text-decoration:none}nav a:hover{text-decoration:underline}
.tw{overflow-x:auto;margin:8px 0 14px}
table{border-collapse:collapse;font-size:13.5px;min-width:40%}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;border-bottom:1.5px solid var(--ink)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.n{white-space:nowrap}
/* Long text (a --cacert path, a URL) breaks anywhere rather than push a table past the page's
   width; other cells wrap between words only, so a column is never narrower than its words. */
td{overflow-wrap:break-word}
td.w{overflow-wrap:anywhere}
tbody tr:nth-child(even){background:var(--soft)}
tr.groups th{text-align:center;border-bottom:1px solid var(--line);font-size:13px}
tr.groups th:empty{border-bottom:none}
tr.total td{font-weight:600;border-top:1.5px solid var(--ink)}
small,.rng{color:var(--mute);font-size:12px}
.rng{display:block}
.bad{color:#b3261e;font-weight:600}
.note{color:var(--mute);font-size:13px}
.figs{display:flex;flex-wrap:wrap;gap:12px 24px;margin:10px 0}
figure{margin:0;flex:1 1 480px;max-width:560px}
.side{flex:1 1 320px}
.side h3:first-child{margin-top:0}
svg.chart{width:100%;height:auto;display:block;font-family:inherit}
svg .ctitle{fill:var(--ink)}
svg .grid{stroke:#e4e6ea;stroke-width:1}
svg .grid.minor{stroke:#f0f1f3;stroke-dasharray:2 3}
svg .frame{stroke:#444;fill:none;stroke-width:1}
svg .tick,svg .vlabel{fill:#444}
svg .atitle{fill:#222}
svg .whisker{stroke:#222;stroke-width:1.4;fill:none}
svg .pt:hover{stroke-width:3}
.cap{color:var(--mute);font-size:13px;margin-top:0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:6px 0 12px;font-size:14px}
dl.kv dt{color:var(--mute)}dl.kv dd{margin:0}
.card{border:1px solid var(--line);border-radius:6px;padding:4px 16px 8px;margin:12px 0}
.card h3{margin-top:12px}
h4{font-size:12px;text-transform:uppercase;letter-spacing:.06em;color:var(--mute);margin:10px 0 4px;font-weight:600}
.prov{display:grid;grid-template-columns:minmax(260px,1fr) 2fr;gap:0 32px}
@media (max-width:800px){.prov{grid-template-columns:1fr}}
ul.opts{columns:2 220px;column-gap:24px;list-style:none;padding:0;margin:6px 0 12px;font-size:13.5px}
ul.opts li{break-inside:avoid;padding:1px 0}
.opts .k{color:var(--mute);margin-right:6px}
footer{margin-top:40px;padding-top:10px;border-top:1px solid var(--line);color:var(--mute);font-size:12.5px}
@media print{
 @page{margin:14mm}
 body{max-width:none;padding:0;font-size:11pt}
 nav{display:none}
 h2,h3,h4{break-after:avoid}
 figure,table,.card{break-inside:avoid}
 .tw{overflow:visible}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 a{color:inherit;text-decoration:none}
}
"#;

/// Checks every chart after load and leaves the verdict in `<body data-ok>`: `ok`, or what went
/// wrong. Drawn means: a positive rendered size, and as many polyline vertices plus bars as the
/// chart's `data-points` says, and at least one. `data-cut-tables`: tables wider than the page
/// at this window's width (they scroll sideways). `data-broken-words`: words of a heading or of
/// a cell not marked as long text (`.w`) that the layout split across lines (`persis|tent`).
const CHECK_JS: &str = r#"
(function(){
 var b=document.body,errs=[];
 window.addEventListener('error',function(e){errs.push(String(e.message));b.setAttribute('data-ok','error: '+errs.join('; '));});
 try{
  var cs=document.querySelectorAll('svg.chart'),bad=[],total=0;
  for(var i=0;i<cs.length;i++){
   var s=cs[i],want=+s.getAttribute('data-points'),got=0,ls=s.querySelectorAll('polyline.series');
   for(var j=0;j<ls.length;j++){got+=ls[j].points.numberOfItems;}
   got+=s.querySelectorAll('rect.bar').length;
   var r=s.getBoundingClientRect();
   if(!(got>0&&got===want&&r.width>0&&r.height>0)){bad.push(s.id+' '+got+'/'+want);}
   total+=got;
  }
  b.setAttribute('data-charts',String(cs.length));
  b.setAttribute('data-points',String(total));
  var tw=document.querySelectorAll('.tw'),cut=0,which=[];
  for(var k=0;k<tw.length;k++){if(tw[k].scrollWidth>tw[k].clientWidth+1){cut++;var t=tw[k].querySelector('table');which.push((t?t.className:'?')+' '+tw[k].scrollWidth+'/'+tw[k].clientWidth);}}
  b.setAttribute('data-cut-tables',String(cut));
  b.setAttribute('data-cut-which',which.join(', '));
  var cells=document.querySelectorAll('.tw th,.tw td:not(.w)'),broke=[];
  for(var c=0;c<cells.length;c++){
   var tw2=document.createTreeWalker(cells[c],NodeFilter.SHOW_TEXT),tn;
   while((tn=tw2.nextNode())){
    var re=/[A-Za-z]{3,}/g,m;
    while((m=re.exec(tn.data))){
     var rg=document.createRange();rg.setStart(tn,m.index);rg.setEnd(tn,m.index+m[0].length);
     var rs=rg.getClientRects();
     if(rs.length>1&&rs[0].top!==rs[rs.length-1].top&&broke.length<20){broke.push(m[0]);}
    }
   }
  }
  b.setAttribute('data-broken-words',String(broke.length));
  b.setAttribute('data-broken-which',broke.join(', '));
  if(!errs.length){b.setAttribute('data-ok',bad.length?'bad: '+bad.join(', '):'ok');}
 }catch(e){b.setAttribute('data-ok','exception: '+e);}
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_cells_are_taken_as_html_and_headings_escaped() {
        let t = table(
            &[Col("<b>", false), Col("n", true)],
            &[vec!["<i>x</i>".into(), "1".into()]],
            "t",
        );
        assert!(t.contains("<th>&lt;b&gt;</th>"));
        assert!(t.contains("<td><i>x</i></td>"));
        assert!(t.contains(r#"<td class="n">1</td>"#));
    }

    #[test]
    fn only_a_cell_with_a_long_word_may_break_inside_words() {
        let t = table(
            &[Col("way", false), Col("file", false), Col("n", true)],
            &[vec![
                "persistent tls".into(),
                "<code>/home/someone/certificates/ca.pem</code>".into(),
                "123456789012345678901234".into(),
            ]],
            "t",
        );
        assert!(t.contains("<td>persistent tls</td>"), "{t}");
        assert!(t.contains(r#"<td class="w"><code>/home/"#), "{t}");
        assert!(t.contains(r#"<td class="n">1234"#), "{t}");
        // Markup is not text: a long tag around short words leaves the cell as it is.
        assert!(!has_long_word(
            r#"<small class="rng" title="a long title here">x y</small>"#
        ));
        assert!(has_long_word("TLS_AES_128_GCM_SHA256"));
    }

    #[test]
    fn file_names_in_the_header_are_escaped() {
        let html = Page::default().finish(&[("<img src=x onerror=alert(1)>.json", "bench")]);
        assert!(!html.contains("<img"));
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;.json"));
    }
}
