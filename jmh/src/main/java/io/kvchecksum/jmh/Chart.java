package io.kvchecksum.jmh;

import io.kvchecksum.jmh.Suite.Report.Row;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

import javax.imageio.ImageIO;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The chart of a run: one panel per model shape, GB/s of KV (log) against tokens per request (log), a line per
 * backend (and CPU variant) for the fused block checksums and the read bound (the fastest reader at each size) and
 * copy bound as dashed lines, so the sizes where the caches end show as steps. Written as PNG.
 */
final class Chart {
    private static final int PANEL_W = 640;
    private static final int PANEL_H = 420;
    private static final int TITLE_H = 36;

    private Chart() {
    }

    static void draw(Suite.Report report, Path file, String title) throws IOException {
        System.setProperty("java.awt.headless", "true");
        // the read bound is the fastest reader at each size: one dashed line, not one per reader
        Map<String, List<Row>> byShape = Stream.concat(report.rows().stream()
                .filter(r -> r.op().equals("blockChecksums") || r.op().equals("copy")), report.readBounds().stream())
                .collect(Collectors.groupingBy(Row::shape, LinkedHashMap::new, Collectors.toList()));
        if (byShape.isEmpty()) {
            return;
        }
        List<BufferedImage> panels = new ArrayList<>();
        for (Map.Entry<String, List<Row>> e : byShape.entrySet()) {
            panels.add(BitmapEncoder.getBufferedImage(panel(e.getKey(), e.getValue())));
        }
        int cols = Math.min(2, panels.size());
        int rows = (panels.size() + cols - 1) / cols;
        BufferedImage img = new BufferedImage(cols * PANEL_W, rows * PANEL_H + TITLE_H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, img.getWidth(), img.getHeight());
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
        g.drawString(title, 12, 24);
        for (int i = 0; i < panels.size(); i++) {
            g.drawImage(panels.get(i), (i % cols) * PANEL_W, TITLE_H + (i / cols) * PANEL_H, null);
        }
        g.dispose();
        ImageIO.write(img, "png", file.toFile());
    }

    private static XYChart panel(String shape, List<Row> rows) {
        XYChart c = new XYChartBuilder().width(PANEL_W).height(PANEL_H).title(shape)
                .xAxisTitle("tokens per request").yAxisTitle("GB/s of KV").build();
        c.getStyler().setXAxisLogarithmic(true);
        c.getStyler().setYAxisLogarithmic(true);
        c.getStyler().setLegendPosition(Styler.LegendPosition.InsideSE);
        c.getStyler().setChartBackgroundColor(Color.WHITE);
        Map<String, List<Row>> series = rows.stream().collect(Collectors.groupingBy(r -> r.backend().equals("bound")
                ? (r.op().startsWith("read") ? "read" : r.op()) + " bound" : r.backend(), LinkedHashMap::new, Collectors.toList()));
        for (Map.Entry<String, List<Row>> e : series.entrySet()) {
            List<Row> pts = e.getValue().stream().sorted(Comparator.comparingLong(Row::tokens)).toList();
            XYSeries s = c.addSeries(e.getKey(), pts.stream().mapToDouble(Row::tokens).toArray(),
                    pts.stream().mapToDouble(Row::gbps).toArray());
            s.setMarker(SeriesMarkers.CIRCLE);
            if (e.getKey().endsWith("bound")) {
                s.setLineStyle(SeriesLines.DASH_DASH);
                s.setLineColor(e.getKey().startsWith("read") ? Color.BLACK : Color.GRAY);
                s.setMarkerColor(e.getKey().startsWith("read") ? Color.BLACK : Color.GRAY);
            }
        }
        return c;
    }
}
