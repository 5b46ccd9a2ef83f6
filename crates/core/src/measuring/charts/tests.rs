use super::*;

fn spread(median: f64, min: f64, max: f64) -> Spread {
    Spread { median, min, max }
}

fn heatmap(fast: f64) -> Chart {
    Chart::Heatmap(HeatmapChart {
        title: "Speedup by target and draft".into(),
        rows: vec!["qwen2.5-coder-1.5b".into(), "qwen2.5-7b".into()],
        cols: vec!["qwen2.5-coder-0.5b".into(), "SmolLM2-135M".into(), "lookup (no draft)".into()],
        cells: vec![
            vec![
                HeatCell::Speedup { speedup: spread(fast, fast - 0.1, fast + 0.1), setting: "k=4".into(), cross: true },
                HeatCell::Incompatible,
                HeatCell::Speedup { speedup: spread(0.8, 0.75, 0.85), setting: "k=2".into(), cross: false },
            ],
            vec![HeatCell::Pending, HeatCell::TooBig, HeatCell::Failed],
        ],
    })
}

fn all_kinds() -> Vec<Chart> {
    vec![
        Chart::Bars(BarsChart {
            title: "Tokens/s".into(),
            groups: vec![BarGroup {
                label: "qwen".into(),
                baseline: spread(30.0, 28.0, 31.0),
                speculative: spread(36.0, 33.0, 38.0),
            }],
        }),
        Chart::Timeline(TimelineChart {
            title: "Tokens/s over the run".into(),
            series: vec![
                Series { label: "baseline".into(), points: vec![(0.1, 28.0), (0.5, 30.0), (1.0, 31.0)] },
                Series { label: "speculative".into(), points: vec![(0.1, 20.0), (0.4, 45.0), (0.8, 40.0)] },
            ],
        }),
        Chart::Positions(PositionsChart {
            title: "Acceptance by position".into(),
            drafted: vec![40, 30, 20, 0],
            accepted: vec![30, 15, 5, 0],
        }),
        Chart::Lengths(LengthsChart { title: "Accepted per round".into(), histogram: vec![10, 5, 3, 8] }),
        heatmap(1.4),
        Chart::DraftLength(DraftLengthChart {
            title: "Speedup by draft length".into(),
            series: vec![DraftLengthSeries {
                label: "qwen + 0.5b".into(),
                measured: vec![(2.0, 1.1), (4.0, 1.2), (8.0, 0.9)],
                predicted: vec![(2.0, 1.15), (4.0, 1.25), (8.0, 1.0)],
            }],
        }),
        card("1.42× faster", CardTone::Faster),
    ]
}

fn card(headline: &str, tone: CardTone) -> Chart {
    let piece = |t: &str, drafted: bool| CardPiece { text: t.into(), drafted };
    Chart::Card(CardChart {
        title: "qwen2.5-coder-1.5b-instruct with qwen2.5-coder-0.5b-instruct (Draft model)".into(),
        machine: "Apple M3 Pro · 36 GiB · Metal".into(),
        headline: headline.into(),
        tone,
        detail: "16.1 → 22.9 tok/s · identical output".into(),
        reason: "median of 3 runs, 1.31–1.50×".into(),
        baseline: spread(16.1, 15.8, 16.4),
        speculative: spread(22.9, 21.0, 24.0),
        excerpt: (0..60)
            .map(|i| {
                piece(
                    if i % 9 == 8 {
                        "\n"
                    } else if i % 3 == 0 {
                        "def "
                    } else {
                        "fib(n):"
                    },
                    i % 2 == 0,
                )
            })
            .collect(),
    })
}

/// A card: its headline, pair and machine in the drawing (hostile text as text), the drafted
/// pieces in the speculative colour, and a tone of each kind drawn in its own colour.
#[test]
fn a_result_card_holds_its_words_and_marks_drafted_tokens() {
    let s = svg(&card("1.42× faster", CardTone::Faster), CARD_WIDTH, CARD_HEIGHT).expect("svg");
    for text in
        ["1.42× faster", "Apple M3 Pro", "qwen2.5-coder-1.5b-instruct", "22.9 tok/s", "drafted and accepted", "fib(n):"]
    {
        assert!(s.contains(text), "{text} missing");
    }
    let Chart::Card(mut hostile) = card("<script>x</script>", CardTone::Noise) else { unreachable!() };
    hostile.title = "a <b>&</b> \"quoted\" name".into();
    let s = svg(&Chart::Card(hostile), CARD_WIDTH, CARD_HEIGHT).expect("svg");
    assert!(!s.contains("<script>") && !s.contains("<b>"), "text written as markup");
    let blue = |c: &Chart| {
        let (_, _, pixels, bpp) = decode(&png(c, CARD_WIDTH, CARD_HEIGHT, 1).expect("png"));
        pixels.chunks(bpp).filter(|p| i32::from(p[2]) - i32::from(p[0]) > 60).count()
    };
    let Chart::Card(mut none) = card("1.00×", CardTone::Noise) else { unreachable!() };
    let drafted = blue(&Chart::Card(none.clone()));
    none.excerpt.iter_mut().for_each(|p| p.drafted = false);
    assert!(drafted > blue(&Chart::Card(none)) + 200, "drafted pieces are not drawn in their colour");
}

/// Decodes a PNG: (width, height, RGB(A) bytes, bytes per pixel).
fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf, info.color_type.samples())
}

#[test]
fn every_kind_draws_a_png_of_the_asked_size_that_is_not_blank() {
    for chart in all_kinds() {
        let bytes = png(&chart, 640, 360, 2).expect("png");
        let (w, h, pixels, bpp) = decode(&bytes);
        assert_eq!((w, h), (1280, 720), "{}", chart.kind());
        let non_white = pixels.chunks(bpp).filter(|p| p[..3] != [255, 255, 255]).count();
        let share = non_white as f64 / (w * h) as f64;
        assert!(share > 0.01, "{}: only {:.3} % of the pixels are drawn", chart.kind(), 100.0 * share);
        let colours: std::collections::HashSet<&[u8]> = pixels.chunks(bpp).collect();
        assert!(colours.len() > 8, "{}: {} colours", chart.kind(), colours.len());
    }
}

#[test]
fn different_data_draws_different_pixels_and_the_same_data_the_same_bytes() {
    let a = png(&heatmap(1.4), WIDTH, HEIGHT, 1).expect("png");
    let b = png(&heatmap(0.6), WIDTH, HEIGHT, 1).expect("png");
    assert_ne!(decode(&a).2, decode(&b).2);
    assert_eq!(a, png(&heatmap(1.4), WIDTH, HEIGHT, 1).expect("png"));
    for chart in all_kinds() {
        assert_eq!(svg(&chart, WIDTH, HEIGHT).expect("svg"), svg(&chart, WIDTH, HEIGHT).expect("svg"));
    }
}

/// Polygons the heat map draws besides the markers (none: cells are rectangles).
fn heatmap_polygons_without_markers() -> usize {
    let Chart::Heatmap(mut h) = heatmap(1.4) else { unreachable!() };
    for row in &mut h.cells {
        for c in row {
            if let HeatCell::Speedup { cross, .. } = c {
                *cross = false;
            }
        }
    }
    svg(&Chart::Heatmap(h), WIDTH, HEIGHT).expect("svg").matches("<polygon").count()
}

#[test]
fn svg_holds_the_labels_and_cell_values() {
    // (Drawn wide: at the default width a long name breaks over two lines, tested below.)
    let s = svg(&heatmap(1.4), 1000, 450).expect("svg");
    assert!(s.starts_with("<svg"), "{}", &s[..80.min(s.len())]);
    for text in [
        "qwen2.5-coder-1.5b",
        "SmolLM2-135M",
        "lookup (no draft)",
        "1.40×",
        "0.80×",
        "incompatible",
        "too big",
        "speedup",
        "k=4",
        "cross-vocab",
    ] {
        assert!(s.contains(text), "the heat map SVG lacks {text:?}");
    }
    // (A detail too wide for its cell goes on two lines: "1.30–1.50 · k=4" and "cross-vocab".)
    assert_eq!(s.matches("cross-vocab").count(), 1, "only the cross-vocabulary cell is marked");
    // At the size shown, a column's name too long for it breaks after a hyphen.
    let narrow = svg(&heatmap(1.4), WIDTH, HEIGHT).expect("svg");
    let texts: Vec<&str> = narrow.lines().map(str::trim).collect();
    assert!(texts.contains(&"qwen2.5-") && texts.contains(&"coder-0.5b"), "{narrow}");
    // The corner marker: one filled triangle, for the one cross-vocabulary cell.
    assert_eq!(s.matches("<polygon").count(), heatmap_polygons_without_markers() + 1, "{s}");
    let bars = svg(&all_kinds()[0], WIDTH, HEIGHT).expect("svg");
    for text in ["tokens/s", "baseline (target alone)", "speculative", "1.20×"] {
        assert!(bars.contains(text), "the bars SVG lacks {text:?}");
    }
    let dl = svg(&all_kinds()[5], WIDTH, HEIGHT).expect("svg");
    for text in ["draft length (tokens)", "qwen + 0.5b measured", "qwen + 0.5b predicted"] {
        assert!(dl.contains(text), "the draft-length SVG lacks {text:?}");
    }
}

#[test]
fn empty_data_draws_a_message_and_bad_sizes_are_refused() {
    let empty = Chart::Bars(BarsChart { title: "Tokens/s".into(), groups: vec![] });
    assert!(svg(&empty, WIDTH, HEIGHT).expect("svg").contains("no runs yet"));
    let empty = Chart::Positions(PositionsChart { title: "p".into(), drafted: vec![0, 0], accepted: vec![0, 0] });
    assert!(svg(&empty, WIDTH, HEIGHT).expect("svg").contains("nothing drafted"));
    assert_eq!(svg(&heatmap(1.0), 10, 10).unwrap_err().code(), "invalid_settings");
    assert_eq!(png(&heatmap(1.0), WIDTH, HEIGHT, 9).unwrap_err().code(), "invalid_settings");
}

#[test]
fn speedup_colours_are_vermillion_below_one_and_blue_above() {
    // (Okabe–Ito's: told apart with the common colour-vision deficiencies, unlike red and green.)
    let one = draw::speedup_color(1.0);
    assert_eq!((one.0, one.1, one.2), (247, 247, 247));
    let slow = draw::speedup_color(0.5);
    assert!(slow.0 > 200 && slow.2 < 40, "{slow:?}");
    let fast = draw::speedup_color(2.0);
    assert!(fast.2 > 160 && fast.0 < 40, "{fast:?}");
    // Beyond ½× and 2× the colour saturates.
    assert_eq!(draw::speedup_color(0.1), slow);
}

#[test]
fn charts_round_trip_through_json() {
    for chart in all_kinds() {
        let json = serde_json::to_string(&chart).expect("serialise");
        assert!(json.contains(&format!("\"kind\":\"{}\"", chart.kind())));
        assert_eq!(serde_json::from_str::<Chart>(&json).expect("parse"), chart);
    }
}

#[test]
fn timeline_rates_come_from_token_times() {
    // One token every 50 ms: 20 tokens/s at every point.
    let times: Vec<f32> = (0..20).map(|i| i as f32 * 50.0).collect();
    let points = data::rate_points(&times, 4);
    assert_eq!(points.len(), 16);
    assert!(points.iter().all(|&(_, r)| (r - 20.0).abs() < 1e-9), "{points:?}");
    assert!((points[0].0 - 0.2).abs() < 1e-9);
}

/// Writes every kind as PNG to $DRAFTLAB_CHART_SAMPLES (to look at them); does nothing otherwise.
#[test]
fn write_samples_when_asked() {
    let Some(dir) = std::env::var_os("DRAFTLAB_CHART_SAMPLES") else { return };
    for chart in all_kinds() {
        let (w, h) = if chart.kind() == "card" { (CARD_WIDTH, CARD_HEIGHT) } else { (WIDTH, HEIGHT) };
        save(&chart, &std::path::Path::new(&dir).join(format!("{}.png", chart.kind())), w, h).expect("save");
    }
}

/// Every number after `attr="` in the SVG.
fn svg_numbers(svg: &str, attr: &str) -> Vec<f64> {
    let key = format!("{attr}=\"");
    svg.match_indices(&key)
        .filter_map(|(i, _)| svg[i + key.len()..].split('"').next()?.trim_end_matches("px").parse().ok())
        .collect()
}

#[test]
fn type_is_readable_and_lines_are_not_hairlines_at_the_size_shown() {
    for chart in all_kinds() {
        let s = svg(&chart, WIDTH, HEIGHT).expect("svg");
        let sizes = svg_numbers(&s, "font-size");
        assert!(!sizes.is_empty(), "{}: no text", chart.kind());
        assert!(sizes.iter().all(|&f| f >= 12.0), "{}: type below 12 px: {sizes:?}", chart.kind());
        // Series are coloured polylines (plotters' SVG; the grid and axes are grey): none thinner
        // than 2 px.
        let grey = |tag: &str| {
            tag.split("stroke=\"#")
                .nth(1)
                .and_then(|c| c.get(..6))
                .is_some_and(|c| c[..2] == c[2..4] && c[2..4] == c[4..6])
        };
        let lines: Vec<f64> = s
            .split("<polyline")
            .skip(1)
            .map(|p| p.split('>').next().unwrap_or(""))
            .filter(|tag| !grey(tag))
            .filter_map(|tag| svg_numbers(tag, "stroke-width").first().copied())
            .collect();
        assert!(
            !lines.is_empty() || chart.kind() == "heatmap" || chart.kind() == "positions" || chart.kind() == "lengths",
            "{}: no series lines",
            chart.kind()
        );
        assert!(lines.iter().all(|&w| w >= 2.0), "{}: a series thinner than 2 px: {lines:?}", chart.kind());
    }
}
