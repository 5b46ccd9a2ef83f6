//! Drawing each chart on any plotters backend. Every length is in CSS pixels times `s` (the PNG
//! scale), so the SVG and the PNG have the same layout.

use std::sync::Once;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{BarsChart, Chart, DraftLengthChart, HeatCell, HeatmapChart, LengthsChart, PositionsChart, TimelineChart};
use crate::error::{Error, Result};

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

const FONT: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

const INK: RGBColor = RGBColor(33, 37, 41);
const MUTED: RGBColor = RGBColor(108, 117, 125);
const BASELINE: RGBColor = RGBColor(134, 150, 168);
const SPECULATIVE: RGBColor = RGBColor(46, 157, 91);
const SLOW: RGBColor = RGBColor(215, 48, 31);
const NEUTRAL: RGBColor = RGBColor(247, 247, 247);
const FAST: RGBColor = RGBColor(26, 152, 80);
const NOT_RUN: RGBColor = RGBColor(200, 200, 200);
/// Colours of successive series (lines of a timeline, pairs of a draft-length chart).
const PALETTE: [RGBColor; 6] = [
    RGBColor(134, 150, 168),
    RGBColor(46, 157, 91),
    RGBColor(52, 101, 164),
    RGBColor(230, 126, 34),
    RGBColor(142, 68, 173),
    RGBColor(192, 57, 43),
];

pub(super) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TTF (a test draws text with it); nothing to do if it were not.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

pub(super) fn check_size(width: u32, height: u32) -> Result<()> {
    if !(200..=4000).contains(&width) || !(150..=4000).contains(&height) {
        return Err(Error::InvalidSettings(format!(
            "a chart must be 200–4000 × 150–4000 pixels, not {width} × {height}"
        )));
    }
    Ok(())
}

fn px(s: f64, v: f64) -> i32 {
    (v * s).round() as i32
}

fn upx(s: f64, v: f64) -> u32 {
    (v * s).round().max(0.0) as u32
}

fn font(s: f64, size: f64) -> TextStyle<'static> {
    FontDesc::new(FontFamily::SansSerif, size * s, FontStyle::Normal).color(&INK)
}

fn stroke(color: RGBColor, s: f64, width: f64) -> ShapeStyle {
    ShapeStyle { color: color.to_rgba(), filled: false, stroke_width: upx(s, width).max(1) }
}

/// A round upper bound for an axis (1, 2 or 5 × a power of ten, at least `v`).
fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * p).find(|&x| x >= v).unwrap_or(10.0 * p)
}

fn finite_or(v: f64, fallback: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        fallback
    }
}

type Ctx<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A titled chart on `area` with label areas of (x, y) CSS pixels and the given axis ranges.
fn chart_on<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    s: f64,
    (x_area, y_area): (f64, f64),
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> std::result::Result<Ctx<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    ChartBuilder::on(area)
        .caption(title, font(s, 16.0))
        .margin(px(s, 12.0))
        .x_label_area_size(px(s, x_area))
        .y_label_area_size(px(s, y_area))
        .build_cartesian_2d(x, y)
}

/// The series legend, in one style for every chart.
fn legend<'a, DB: DrawingBackend + 'a>(
    ch: &mut Ctx<'a, DB>,
    position: SeriesLabelPosition,
    key_width: f64,
    s: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    ch.configure_series_labels()
        .position(position)
        .label_font(font(s, 11.0))
        .background_style(WHITE.mix(0.85))
        .border_style(stroke(RGBColor(210, 210, 210), s, 1.0))
        .margin(px(s, 6.0))
        .legend_area_size(px(s, key_width))
        .draw()?;
    Ok(())
}

pub(super) fn draw<DB: DrawingBackend>(backend: DB, chart: &Chart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    match chart {
        Chart::Bars(c) => bars(&root, c, s)?,
        Chart::Timeline(c) => timeline(&root, c, s)?,
        Chart::Positions(c) => positions(&root, c, s)?,
        Chart::Lengths(c) => lengths(&root, c, s)?,
        Chart::Heatmap(c) => heatmap(&root, c, s)?,
        Chart::DraftLength(c) => draft_length(&root, c, s)?,
    }
    root.present()?;
    Ok(())
}

/// A message in the middle of an empty chart.
fn empty<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, message: &str, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, px(s, 12.0)),
        font(s, 16.0).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    root.draw(&Text::new(
        message.to_string(),
        (w as i32 / 2, h as i32 / 2),
        font(s, 13.0).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

fn bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BarsChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if c.groups.is_empty() {
        return empty(root, &c.title, "no runs yet", s);
    }
    let n = c.groups.len();
    let top = c
        .groups
        .iter()
        .flat_map(|g| [g.baseline.max, g.speculative.max, g.baseline.median, g.speculative.median])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let mut ch = chart_on(root, &c.title, s, (40.0, 56.0), 0f64..n as f64, 0f64..nice_max(top * 1.18))?;
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("tokens/s")
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    let bar = |i: usize, left: bool, v: f64, color: RGBColor| {
        let x0 = i as f64 + if left { 0.14 } else { 0.52 };
        Rectangle::new([(x0, 0.0), (x0 + 0.34, finite_or(v, 0.0))], color.filled())
    };
    ch.draw_series(c.groups.iter().enumerate().map(|(i, g)| bar(i, true, g.baseline.median, BASELINE)))?
        .label("baseline (target alone)")
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - px(s, 5.0)), (x + px(s, 12.0), y + px(s, 5.0))], BASELINE.filled())
        });
    ch.draw_series(c.groups.iter().enumerate().map(|(i, g)| bar(i, false, g.speculative.median, SPECULATIVE)))?
        .label("speculative")
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - px(s, 5.0)), (x + px(s, 12.0), y + px(s, 5.0))], SPECULATIVE.filled())
        });
    // Min–max whiskers.
    for (i, g) in c.groups.iter().enumerate() {
        for (left, sp) in [(true, &g.baseline), (false, &g.speculative)] {
            if !(sp.min.is_finite() && sp.max.is_finite()) || sp.max <= sp.min {
                continue;
            }
            let x = i as f64 + if left { 0.31 } else { 0.69 };
            let cap = 0.05;
            let style = stroke(INK, s, 1.5);
            ch.draw_series([
                PathElement::new(vec![(x, sp.min), (x, sp.max)], style),
                PathElement::new(vec![(x - cap, sp.min), (x + cap, sp.min)], style),
                PathElement::new(vec![(x - cap, sp.max), (x + cap, sp.max)], style),
            ])?;
        }
    }
    // The speedup over each group, and the group's label under it.
    for (i, g) in c.groups.iter().enumerate() {
        let (x, _) = ch.backend_coord(&(i as f64 + 0.5, 0.0));
        let high = finite_or(g.baseline.max.max(g.speculative.max), 0.0).max(g.speculative.median);
        let (_, y) = ch.backend_coord(&(i as f64 + 0.5, finite_or(high, 0.0)));
        if g.baseline.median > 0.0 && g.speculative.median.is_finite() {
            let speedup = g.speculative.median / g.baseline.median;
            let color = if speedup >= 1.0 { FAST } else { SLOW };
            root.draw(&Text::new(
                format!("{speedup:.2}×"),
                (x, y - px(s, 4.0)),
                font(s, 13.0).color(&color).pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
        let (_, y0) = ch.backend_coord(&(0.0, 0.0));
        root.draw(&Text::new(
            g.label.clone(),
            (x, y0 + px(s, 8.0)),
            font(s, 11.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    legend(&mut ch, SeriesLabelPosition::UpperLeft, 18.0, s)?;
    Ok(())
}

fn timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &TimelineChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let points = || c.series.iter().flat_map(|x| x.points.iter()).filter(|(x, y)| x.is_finite() && y.is_finite());
    if points().next().is_none() {
        return empty(root, &c.title, "no tokens yet", s);
    }
    let xmax = points().map(|p| p.0).fold(0.0, f64::max);
    let ymax = points().map(|p| p.1).fold(0.0, f64::max);
    let mut ch = chart_on(root, &c.title, s, (40.0, 56.0), 0f64..nice_max(xmax), 0f64..nice_max(ymax * 1.1))?;
    ch.configure_mesh()
        .x_desc("seconds")
        .y_desc("tokens/s")
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    for (i, series) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> =
            series.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        ch.draw_series(LineSeries::new(pts, stroke(color, s, 2.0)))?
            .label(series.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + px(s, 16.0), y)], stroke(color, s, 2.0)));
    }
    legend(&mut ch, SeriesLabelPosition::LowerRight, 22.0, s)?;
    Ok(())
}

/// Bars over categories 0..n with a label under each: shared by the positions and lengths charts.
#[allow(clippy::too_many_arguments)]
fn category_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    values: &[f64],
    notes: &[String],
    x_desc: &str,
    y_desc: &str,
    y_top: f64,
    s: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let n = values.len().max(1);
    let mut ch = chart_on(root, title, s, (44.0, 56.0), 0f64..n as f64, 0f64..y_top)?;
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(y_desc)
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    ch.draw_series(values.iter().enumerate().map(|(i, &v)| {
        Rectangle::new([(i as f64 + 0.15, 0.0), (i as f64 + 0.85, finite_or(v, 0.0))], SPECULATIVE.filled())
    }))?;
    let (_, y0) = ch.backend_coord(&(0.0, 0.0));
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = ch.backend_coord(&(i as f64 + 0.5, finite_or(values[i], 0.0)));
        root.draw(&Text::new(
            label.clone(),
            (x, y0 + px(s, 6.0)),
            font(s, 12.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        if let Some(note) = notes.get(i) {
            root.draw(&Text::new(
                note.clone(),
                (x, y - px(s, 3.0)),
                font(s, 10.0).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
    }
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        x_desc.to_string(),
        (w as i32 / 2, h as i32 - px(s, 6.0)),
        font(s, 12.0).pos(Pos::new(HPos::Center, VPos::Bottom)),
    ))?;
    Ok(())
}

fn positions<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &PositionsChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let n = c.drafted.iter().rposition(|&d| d > 0).map_or(0, |i| i + 1);
    if n == 0 {
        return empty(root, &c.title, "nothing drafted", s);
    }
    let rates: Vec<f64> = (0..n)
        .map(|i| {
            let d = c.drafted[i];
            if d == 0 {
                0.0
            } else {
                100.0 * c.accepted.get(i).copied().unwrap_or(0) as f64 / d as f64
            }
        })
        .collect();
    let labels: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    let notes: Vec<String> = rates.iter().zip(&c.drafted).map(|(r, d)| format!("{r:.0}% of {d}")).collect();
    category_bars(root, &c.title, &labels, &rates, &notes, "draft position", "accepted (%)", 110.0, s)
}

fn lengths<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LengthsChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let n = c.histogram.iter().rposition(|&d| d > 0).map_or(0, |i| i + 1);
    if n == 0 {
        return empty(root, &c.title, "no drafting rounds", s);
    }
    let values: Vec<f64> = c.histogram[..n].iter().map(|&v| v as f64).collect();
    let labels: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let notes: Vec<String> = c.histogram[..n].iter().map(u64::to_string).collect();
    let top = nice_max(values.iter().copied().fold(0.0, f64::max) * 1.12);
    category_bars(root, &c.title, &labels, &values, &notes, "draft tokens accepted in a round", "rounds", top, s)
}

/// The colour of a speedup: red below 1×, near-white at 1×, green above, saturating at ½× and 2×.
pub(super) fn speedup_color(speedup: f64) -> RGBColor {
    let t = if speedup > 0.0 { speedup.log2().clamp(-1.0, 1.0) } else { -1.0 };
    let (from, to, t) = if t < 0.0 { (NEUTRAL, SLOW, -t) } else { (NEUTRAL, FAST, t) };
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

fn heatmap<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &HeatmapChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if c.rows.is_empty() || c.cols.is_empty() {
        return empty(root, &c.title, "no cells", s);
    }
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w.saturating_sub(upx(s, 84.0)));
    let (rows, cols) = (c.rows.len(), c.cols.len());
    let row_label_width = c.rows.iter().map(|r| r.chars().count()).max().unwrap_or(0).clamp(6, 28) as f64 * 6.6 + 12.0;
    let mut ch = ChartBuilder::on(&plot)
        .caption(&c.title, font(s, 16.0))
        .margin(px(s, 12.0))
        .x_label_area_size(px(s, 36.0))
        .y_label_area_size(px(s, row_label_width))
        .build_cartesian_2d(0f64..cols as f64, 0f64..rows as f64)?;
    let cell_font = (9.0 + 14.0 / (rows.max(cols) as f64).sqrt()).min(15.0);
    for (r, row) in c.cells.iter().enumerate().take(rows) {
        let y1 = (rows - r) as f64;
        for (k, cell) in row.iter().enumerate().take(cols) {
            let x0 = k as f64;
            let (fill, text, detail) = match cell {
                HeatCell::Speedup { speedup, setting, cross } => {
                    let setting = if *cross { format!("{setting} · cross-vocab") } else { setting.clone() };
                    (
                        speedup_color(speedup.median),
                        format!("{:.2}×", speedup.median),
                        if speedup.max > speedup.min {
                            format!("{:.2}–{:.2} · {setting}", speedup.min, speedup.max)
                        } else {
                            setting
                        },
                    )
                }
                HeatCell::Incompatible => (NOT_RUN, "incompatible".to_string(), "vocabularies differ".to_string()),
                HeatCell::TooBig => (NOT_RUN, "too big".to_string(), "does not fit in memory".to_string()),
                HeatCell::Failed => (NOT_RUN, "failed".to_string(), String::new()),
                HeatCell::Pending => (WHITE, "…".to_string(), String::new()),
            };
            ch.draw_series([
                Rectangle::new([(x0, y1 - 1.0), (x0 + 1.0, y1)], fill.filled()),
                Rectangle::new([(x0, y1 - 1.0), (x0 + 1.0, y1)], stroke(WHITE, s, 2.0)),
            ])?;
            if matches!(cell, HeatCell::Speedup { cross: true, .. }) {
                // The marker of a draft across vocabularies: a dark corner, top right.
                let (right, top) = ch.backend_coord(&(x0 + 1.0, y1));
                let d = px(s, 12.0);
                plot.draw(&Polygon::new(vec![(right - d, top), (right, top), (right, top + d)], INK.filled()))?;
            }
            let (cx, cy) = ch.backend_coord(&(x0 + 0.5, y1 - 0.5));
            let ink = if matches!(cell, HeatCell::Speedup { .. }) { INK } else { MUTED };
            plot.draw(&Text::new(
                text,
                (cx, cy - px(s, cell_font * 0.35)),
                font(s, cell_font).color(&ink).pos(Pos::new(HPos::Center, VPos::Center)),
            ))?;
            if !detail.is_empty() {
                plot.draw(&Text::new(
                    detail,
                    (cx, cy + px(s, cell_font * 0.75)),
                    font(s, (cell_font * 0.62).max(8.0)).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Center)),
                ))?;
            }
        }
    }
    for (r, label) in c.rows.iter().enumerate() {
        let (x, y) = ch.backend_coord(&(0.0, (rows - r) as f64 - 0.5));
        plot.draw(&Text::new(
            label.clone(),
            (x - px(s, 6.0), y),
            font(s, 11.0).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    for (k, label) in c.cols.iter().enumerate() {
        let (x, y) = ch.backend_coord(&(k as f64 + 0.5, 0.0));
        plot.draw(&Text::new(
            label.clone(),
            (x, y + px(s, 6.0)),
            font(s, 11.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    // The colour scale: ½× (red) to 2× (green), 1× in the middle.
    let (_, lh) = legend.dim_in_pixel();
    let (top, bottom) = (px(s, 48.0), lh as i32 - px(s, 48.0));
    let x0 = px(s, 16.0);
    let steps = 64;
    for i in 0..steps {
        let t = 1.0 - 2.0 * (i as f64 + 0.5) / steps as f64; // +1 at the top
        let y = top + (bottom - top) * i / steps;
        let y_next = top + (bottom - top) * (i + 1) / steps;
        legend.draw(&Rectangle::new([(x0, y), (x0 + px(s, 16.0), y_next)], speedup_color(2f64.powf(t)).filled()))?;
    }
    legend.draw(&Rectangle::new([(x0, top), (x0 + px(s, 16.0), bottom)], stroke(MUTED, s, 1.0)))?;
    for (label, y) in [("≥2×", top), ("1×", (top + bottom) / 2), ("≤½×", bottom)] {
        legend.draw(&Text::new(
            label.to_string(),
            (x0 + px(s, 22.0), y),
            font(s, 11.0).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    legend.draw(&Text::new(
        "speedup".to_string(),
        (x0, top - px(s, 10.0)),
        font(s, 11.0).pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    Ok(())
}

fn draft_length<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &DraftLengthChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let all = || {
        c.series
            .iter()
            .flat_map(|x| x.measured.iter().chain(x.predicted.iter()))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    };
    if all().next().is_none() {
        return empty(root, &c.title, "nothing measured yet", s);
    }
    let xmax = all().map(|p| p.0).fold(1.0, f64::max);
    let ymax = all().map(|p| p.1).fold(1.0, f64::max);
    let mut ch = chart_on(root, &c.title, s, (40.0, 56.0), 0f64..xmax + 1.0, 0f64..nice_max(ymax * 1.15))?;
    ch.configure_mesh()
        .x_desc("draft length (tokens)")
        .x_labels(((xmax + 1.0) as usize + 1).min(12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("speedup (×)")
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    // 1× is where speculation stops paying.
    ch.draw_series(DashedLineSeries::new(
        vec![(0.0, 1.0), (xmax + 1.0, 1.0)],
        upx(s, 4.0),
        upx(s, 4.0),
        stroke(MUTED, s, 1.0),
    ))?;
    for (i, series) in c.series.iter().enumerate() {
        let color = PALETTE[(i + 1) % PALETTE.len()];
        let measured: Vec<(f64, f64)> = series.measured.iter().copied().filter(|p| p.1.is_finite()).collect();
        let predicted: Vec<(f64, f64)> = series.predicted.iter().copied().filter(|p| p.1.is_finite()).collect();
        ch.draw_series(LineSeries::new(measured.clone(), stroke(color, s, 2.0)))?
            .label(format!("{} measured", series.label))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + px(s, 16.0), y)], stroke(color, s, 2.0)));
        ch.draw_series(measured.iter().map(|&p| Circle::new(p, upx(s, 3.5), color.filled())))?;
        if !predicted.is_empty() {
            ch.draw_series(predicted.iter().map(|&p| Circle::new(p, upx(s, 4.0), stroke(color, s, 1.5))))?;
            ch.draw_series(DashedLineSeries::new(predicted, upx(s, 6.0), upx(s, 4.0), stroke(color, s, 1.5)))?
                .label(format!("{} predicted", series.label))
                .legend(move |(x, y)| {
                    DashedPathElement::new(
                        vec![(x, y), (x + px(s, 16.0), y)],
                        upx(s, 4.0),
                        upx(s, 3.0),
                        stroke(color, s, 1.5),
                    )
                });
        }
    }
    legend(&mut ch, SeriesLabelPosition::UpperRight, 22.0, s)?;
    Ok(())
}
