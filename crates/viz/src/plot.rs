//! SVG line plots, drawn with `plotters`: messages per operation against N beside the textbook
//! curve, a detector's detection time and false suspicions against its timeout, clock skew over
//! time ([`skew_timeline`]) and latency distributions given by their quantiles
//! ([`latency_quantiles`]).
//!
//! `plotters` lays text out with a font it measures; the SVG it writes names the font family
//! and leaves drawing the glyphs to the browser. The measuring font, DejaVu Sans (Bitstream Vera
//! licence, `assets/fonts/DejaVuSans.LICENSE`), is embedded so that a plot looks the same on
//! every machine and needs no system font library.

use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// One line of a plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// Its points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Dashed (a formula) rather than solid with markers (a measurement).
    pub dashed: bool,
}

/// A plot: title, axis labels, series, and whether each axis is logarithmic.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Title above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

/// A plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No series has a point (or, on a logarithmic axis, a positive one).
    #[error("plot {0:?}: nothing to draw")]
    Empty(String),
    /// The drawing backend failed.
    #[error("plot {title:?}: {message}")]
    Draw {
        /// The plot's title.
        title: String,
        /// What went wrong.
        message: String,
    },
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The range of `values`: from zero (or below the smallest negative value) to a little above the
/// largest, or on a log axis around the positive values.
fn range(values: impl Iterator<Item = f64>, log: bool) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return None;
    }
    Some(if log {
        (lo / 1.5, hi * 1.5)
    } else {
        // Counts and times start at zero, so that a line's height reads as its size.
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        (if lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
    })
}

/// The quantiles of one latency distribution, as a run's report gives them (virtual ms).
#[derive(Clone, Debug, PartialEq)]
pub struct Quantiles {
    /// What is measured (`response_time`, `time_to_leader`, `detection_time` …).
    pub name: String,
    /// How many samples the quantiles summarise.
    pub count: u64,
    /// The smallest sample.
    pub min: f64,
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The largest sample.
    pub max: f64,
}

/// Clock skew over time: `points` are (end of a slice of the run in s, the largest skew between
/// two clocks in that slice in ms), as the clock checker's `skew_timeline` gives them.
pub fn skew_timeline(points: &[(f64, f64)]) -> Plot {
    Plot {
        title: "clock skew over time".into(),
        x_label: "virtual time (s)".into(),
        y_label: "largest skew between two clocks (ms)".into(),
        series: vec![Series { name: "skew".into(), points: points.to_vec(), dashed: false }],
        log_x: false,
        log_y: false,
    }
}

/// Latency distributions drawn from their quantiles: one line per distribution through (min, 0),
/// (p50, 0.5), (p90, 0.9), (p99, 0.99) and (max, 1), the fraction of samples at or below a
/// latency. Only these five points are known; the lines between them are straight joins, not
/// measurements. Distributions without samples are left out.
pub fn latency_quantiles(distributions: &[Quantiles]) -> Plot {
    let series = distributions
        .iter()
        .filter(|q| q.count > 0)
        .map(|q| Series {
            name: format!("{} ({} sample{})", q.name, q.count, if q.count == 1 { "" } else { "s" }),
            points: vec![(q.min, 0.0), (q.p50, 0.5), (q.p90, 0.9), (q.p99, 0.99), (q.max, 1.0)],
            dashed: false,
        })
        .collect();
    Plot {
        title: "latency distribution (min, p50, p90, p99, max)".into(),
        x_label: "latency (virtual ms)".into(),
        y_label: "fraction of samples ≤ latency".into(),
        series,
        log_x: false,
        log_y: false,
    }
}

/// The corner of the plot area the legend covers the fewest points of (the series' points and
/// points along their lines), upper left when several cover equally few.
fn legend_corner(plot: &Plot, (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> SeriesLabelPosition {
    let frac = |v: f64, lo: f64, hi: f64, log: bool| {
        if log { (v.ln() - lo.ln()) / (hi.ln() - lo.ln()) } else { (v - lo) / (hi - lo) }
    };
    let mut samples = Vec::new();
    for s in &plot.series {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .filter(|(x, y)| (!plot.log_x || *x > 0.0) && (!plot.log_y || *y > 0.0))
            .map(|&(x, y)| (frac(x, x0, x1, plot.log_x), frac(y, y0, y1, plot.log_y)))
            .collect();
        samples.extend(pts.iter().copied());
        for w in pts.windows(2) {
            samples.extend((1..8).map(|k| {
                let t = f64::from(k) / 8.0;
                (w[0].0 + (w[1].0 - w[0].0) * t, w[0].1 + (w[1].1 - w[0].1) * t)
            }));
        }
    }
    // The legend's box: about 45 % of the width and 30 % of the height from its corner.
    let covered = |left: bool, upper: bool| {
        samples
            .iter()
            .filter(|(fx, fy)| {
                (if left { *fx <= 0.45 } else { *fx >= 0.55 })
                    && (if upper { *fy >= 0.7 } else { *fy <= 0.3 })
            })
            .count()
    };
    [
        (covered(true, true), SeriesLabelPosition::UpperLeft),
        (covered(false, true), SeriesLabelPosition::UpperRight),
        (covered(false, false), SeriesLabelPosition::LowerRight),
        (covered(true, false), SeriesLabelPosition::LowerLeft),
    ]
    .into_iter()
    .min_by_key(|(n, _)| *n)
    .map_or(SeriesLabelPosition::UpperLeft, |(_, p)| p)
}

/// The line height of a wrapped y-axis title, and the room its lines leave beside the plot.
const Y_TITLE_LINE: i32 = 15;

/// `text` in lines no wider than `room` pixels by `width_of`, split between words (a word
/// wider than `room` gets a line of its own).
fn wrap(text: &str, room: u32, width_of: impl Fn(&str) -> u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if width_of(&format!("{line} {word}")) <= room => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Draws `plot` as an SVG document of `width` × `height` pixels.
///
/// A y-axis title longer than the plot is tall is wrapped into as many lines as it needs,
/// side by side (plotters draws one line, which a long title overruns and the SVG cuts).
pub fn svg(plot: &Plot, width: u32, height: u32) -> Result<String, PlotError> {
    REGISTER.call_once(|| {
        // The embedded font is valid; a failure would only leave text unmeasured.
        let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let xs = range(plot.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), plot.log_x);
    let ys = range(plot.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), plot.log_y);
    let (Some((x0, x1)), Some((y0, y1))) = (xs, ys) else {
        return Err(PlotError::Empty(plot.title.clone()));
    };
    let corner = legend_corner(plot, (x0, x1), (y0, y1));
    let draw_err =
        |e: &dyn std::fmt::Display| PlotError::Draw { title: plot.title.clone(), message: e.to_string() };
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        let title_style: TextStyle = ("sans-serif", 12).into();
        // Room for the y title: the height less the caption, the margins and the x label area.
        let room = height.saturating_sub(24 + 40 + 34).max(40);
        let y_lines = wrap(&plot.y_label, room, |t| {
            root.estimate_text_size(t, &title_style).map(|(w, _)| w).unwrap_or(u32::MAX)
        });
        let wrapped = y_lines.len() > 1;
        let mut builder = ChartBuilder::on(&root);
        builder.caption(&plot.title, ("sans-serif", 18)).margin(12).x_label_area_size(40).y_label_area_size(
            64 + if wrapped { Y_TITLE_LINE as u32 * (y_lines.len() as u32 - 1) } else { 0 },
        );
        // One body for the four axis kinds: plotters types a chart by its coordinates.
        macro_rules! draw {
            ($x:expr, $y:expr) => {{
                let mut chart = builder.build_cartesian_2d($x, $y).map_err(|e| draw_err(&e))?;
                let mut mesh = chart.configure_mesh();
                mesh.x_desc(plot.x_label.as_str());
                if !wrapped {
                    mesh.y_desc(plot.y_label.as_str());
                }
                mesh.label_style(("sans-serif", 12))
                    .light_line_style(RGBColor(238, 238, 238))
                    // A few labels per axis: a log axis otherwise labels every minor tick.
                    .x_labels(6)
                    .y_labels(6)
                    .draw()
                    .map_err(|e| draw_err(&e))?;
                for (i, s) in plot.series.iter().enumerate() {
                    let colour = COLOURS[i % COLOURS.len()];
                    let points: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|(x, y)| x.is_finite() && y.is_finite())
                        .filter(|(x, y)| (!plot.log_x || *x > 0.0) && (!plot.log_y || *y > 0.0))
                        .collect();
                    let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: 2 };
                    let legend = move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 18, y)], style);
                    if s.dashed {
                        chart
                            .draw_series(DashedLineSeries::new(points, 6, 4, style))
                            .map_err(|e| draw_err(&e))?
                            .label(s.name.as_str())
                            .legend(legend);
                    } else {
                        chart
                            .draw_series(LineSeries::new(points.clone(), style))
                            .map_err(|e| draw_err(&e))?
                            .label(s.name.as_str())
                            .legend(legend);
                        chart
                            .draw_series(points.iter().map(|p| Circle::new(*p, 3, colour.filled())))
                            .map_err(|e| draw_err(&e))?;
                    }
                }
                if wrapped {
                    let (_, ys) = chart.plotting_area().get_pixel_range();
                    let middle = (ys.start + ys.end) / 2;
                    let style = title_style.transform(FontTransform::Rotate270).pos(
                        plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Center,
                            plotters::style::text_anchor::VPos::Top,
                        ),
                    );
                    for (i, line) in y_lines.iter().enumerate() {
                        root.draw(&Text::new(
                            line.as_str(),
                            (12 + Y_TITLE_LINE * i as i32, middle),
                            style.clone(),
                        ))
                        .map_err(|e| draw_err(&e))?;
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .label_font(("sans-serif", 12))
                    .position(corner.clone())
                    .draw()
                    .map_err(|e| draw_err(&e))?;
            }};
        }
        match (plot.log_x, plot.log_y) {
            (false, false) => draw!(x0..x1, y0..y1),
            (true, false) => draw!((x0..x1).log_scale(), y0..y1),
            (false, true) => draw!(x0..x1, (y0..y1).log_scale()),
            (true, true) => draw!((x0..x1).log_scale(), (y0..y1).log_scale()),
        }
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot(log: bool) -> Plot {
        Plot {
            title: "messages per election".into(),
            x_label: "N".into(),
            y_label: "messages".into(),
            series: vec![
                Series {
                    name: "measured".into(),
                    points: vec![(4.0, 10.0), (8.0, 36.0), (16.0, 136.0)],
                    dashed: false,
                },
                Series {
                    name: "N(N+1)/2 − 1".into(),
                    points: vec![(4.0, 9.0), (8.0, 35.0), (16.0, 135.0)],
                    dashed: true,
                },
            ],
            log_x: log,
            log_y: log,
        }
    }

    #[test]
    fn a_plot_is_an_svg_with_its_title_axes_and_legend() {
        for log in [false, true] {
            let s = svg(&plot(log), 640, 400).unwrap();
            // Left in the temporary directory for a look: `ringleader-plot-{log}.svg`.
            let _ = std::fs::write(std::env::temp_dir().join(format!("ringleader-plot-{log}.svg")), &s);
            assert!(s.starts_with("<svg"), "{}", &s[..80.min(s.len())]);
            for text in ["messages per election", "measured", "N(N+1)/2 − 1", "messages"] {
                assert!(s.contains(text), "log {log}: {text} missing in {s}");
            }
            // Three markers for the measured series, none for the formula.
            assert_eq!(s.matches("<circle").count(), 3, "log {log}");
        }
    }

    #[test]
    fn the_skew_and_latency_plots_draw_their_points() {
        let skew = svg(&skew_timeline(&[(0.5, 12.0), (1.0, 3.0), (1.5, 0.4)]), 640, 400).unwrap();
        assert!(skew.contains("clock skew over time") && skew.contains("virtual time (s)"));
        assert_eq!(skew.matches("<circle").count(), 3);
        let q = |name: &str, count| Quantiles {
            name: name.into(),
            count,
            min: 1.0,
            p50: 2.0,
            p90: 4.0,
            p99: 7.5,
            max: 9.0,
        };
        let plot = latency_quantiles(&[q("response_time", 40), q("sync_delay", 0)]);
        assert_eq!(plot.series.len(), 1, "a distribution without samples is left out");
        assert_eq!(plot.series[0].points[3], (7.5, 0.99));
        let s = svg(&plot, 640, 400).unwrap();
        assert!(s.contains("response_time (40 samples)"), "{s}");
        assert_eq!(s.matches("<circle").count(), 5, "one marker per quantile");
        assert!(matches!(svg(&latency_quantiles(&[q("x", 0)]), 640, 400), Err(PlotError::Empty(_))));
    }

    #[test]
    fn the_legend_goes_where_the_lines_are_not() {
        let rising = plot(false);
        assert_eq!(legend_corner(&rising, (0.0, 17.0), (0.0, 140.0)), SeriesLabelPosition::UpperLeft);
        let falling = skew_timeline(&[(1.0, 18.0), (2.0, 7.0), (3.0, 0.4), (10.0, 0.3), (20.0, 0.3)]);
        assert_eq!(legend_corner(&falling, (0.0, 21.0), (0.0, 19.0)), SeriesLabelPosition::UpperRight);
    }

    /// Each rotated text of `svg` (the y-axis title's lines): its text, centre and font size.
    fn rotated_texts(svg: &str) -> Vec<(String, f64, f64)> {
        svg.split("<text ")
            .skip(1)
            .filter(|t| t.contains("rotate(270"))
            .map(|t| {
                let attr = |name: &str| -> f64 {
                    let at =
                        t.find(&format!(" {name}=\"")).or_else(|| t.find(&format!("{name}=\""))).unwrap();
                    let v = &t[at..];
                    let v = &v[v.find('"').unwrap() + 1..];
                    v[..v.find('"').unwrap()].parse().unwrap()
                };
                let text = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
                (text.trim().to_string(), attr("y"), attr("font-size"))
            })
            .collect()
    }

    #[test]
    fn a_long_y_axis_title_is_wrapped_to_fit_the_plot() {
        let mut p = plot(false);
        p.y_label =
            "cost = C * false_suspicions + E * waiting_seconds (summed over live monitors) (lower is better)"
                .into();
        let (width, height) = (520, 320);
        let s = svg(&p, width, height).unwrap();
        let _ = std::fs::write(std::env::temp_dir().join("ringleader-plot-long-title.svg"), &s);
        let lines = rotated_texts(&s);
        assert!(lines.len() > 1, "wrapped: {lines:?}");
        assert_eq!(
            lines.iter().map(|l| l.0.as_str()).collect::<Vec<_>>().join(" "),
            p.y_label,
            "every word, in order"
        );
        for (text, middle, size) in &lines {
            // A generous width per character (DejaVu Sans averages about 0.55 em).
            let half = text.chars().count() as f64 * size * 0.6 / 2.0;
            assert!(
                middle - half >= 0.0 && middle + half <= f64::from(height),
                "{text:?} fits in {height} px"
            );
        }
        // A short title stays one line, drawn by plotters as before.
        let short = svg(&plot(false), width, height).unwrap();
        assert_eq!(rotated_texts(&short).len(), 1);
        assert_eq!(rotated_texts(&short)[0].0, "messages");
    }

    #[test]
    fn nothing_to_draw_is_an_error_not_a_panic() {
        let mut p = plot(true);
        for s in &mut p.series {
            s.points = vec![(0.0, 0.0)];
        }
        assert!(matches!(svg(&p, 640, 400), Err(PlotError::Empty(_))));
    }
}
