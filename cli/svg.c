/* svg.c - see svg.h. */
#include "svg.h"

#include <math.h>

static const char *const k_colors[] = {"#2b6cb0", "#c05621", "#2f855a", "#9b2c2c",
                                       "#6b46c1", "#b7791f", "#2c7a7b", "#4a5568"};
#define W SVG_CHART_W
#define H SVG_CHART_H
#define L 70 /* left margin */
#define B 40 /* bottom margin */
#define T 30 /* top of the plot */

void svg_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* The axis maximum: v rounded up to 1, 2 or 5 times a power of ten. */
static double nice_max(double v) {
    if (!(v > 0)) return 1;
    double p = pow(10, floor(log10(v))), m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
static double px(double x, double xmax) { return L + (W - 10 - L) * x / xmax; }
static double py(double y, double ymax) { return H - B - (H - B - T) * y / ymax; }

/* The frame, the title, five ticks on y (and on x when xmax > 0), the axis labels. */
static void axes(FILE *f, const char *title, const char *xl, const char *yl, double xmax, double ymax) {
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
            "font-size=\"11\">\n<text x=\"%d\" y=\"16\" font-size=\"14\">",
            W, H, L);
    svg_text(f, title);
    fprintf(f,
            "</text>\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n",
            L, H - B, W - 10, H - B, L, T, L, H - B);
    for (int t = 0; t <= 4; t++) {
        double y = py(ymax * t / 4, ymax);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>", L - 4, y + 4, ymax * t / 4);
        if (xmax > 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.4g</text>", px(xmax * t / 4, xmax),
                    H - B + 14, xmax * t / 4);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, y, W - 10, y);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (L + W) / 2, H - 6);
    svg_text(f, xl);
    fprintf(f, "</text><text transform=\"translate(14,%d) rotate(-90)\" text-anchor=\"middle\">", (H - B) / 2 + 15);
    svg_text(f, yl);
    fprintf(f, "</text>\n");
}

static void legend(FILE *f, int i, const char *name) {
    /* top left of the plot, where a long device name has the whole width */
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
            "stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">",
            L + 8, 36 + 14 * i, k_colors[i % 8], L + 22, 45 + 14 * i);
    svg_text(f, name);
    fprintf(f, "</text>\n");
}

void svg_line_chart(FILE *f, const char *title, const char *x_label, const char *y_label, const struct svg_series *s,
                    int n_series) {
    double xmax = 0, ymax = 0;
    for (int i = 0; i < n_series; i++)
        for (int k = 0; k < s[i].n; k++) {
            xmax = s[i].x[k] > xmax ? s[i].x[k] : xmax;
            ymax = s[i].y[k] > ymax ? s[i].y[k] : ymax;
        }
    xmax = nice_max(xmax), ymax = nice_max(ymax);
    axes(f, title, x_label, y_label, xmax, ymax);
    for (int i = 0; i < n_series; i++) {
        const char *col = k_colors[i % 8];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
        for (int k = 0; k < s[i].n; k++) fprintf(f, "%.1f,%.1f ", px(s[i].x[k], xmax), py(s[i].y[k], ymax));
        fprintf(f, "\"/>\n");
        for (int k = 0; k < s[i].n; k++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%.4g: %.4g</title></circle>\n",
                    px(s[i].x[k], xmax), py(s[i].y[k], ymax), col, s[i].x[k], s[i].y[k]);
        legend(f, i, s[i].name);
    }
    fprintf(f, "</svg>\n");
}

void svg_bar_chart(FILE *f, const char *title, const char *y_label, const char *const *labels, int n_labels,
                   const struct svg_bar_set *sets, int n_sets) {
    double ymax = 0;
    for (int k = 0; k < n_sets; k++) {
        for (int j = 0; j < n_labels; j++) ymax = sets[k].v[j] > ymax ? sets[k].v[j] : ymax;
        ymax = sets[k].peak > ymax ? sets[k].peak : ymax;
    }
    ymax = nice_max(ymax);
    axes(f, title, "", y_label, 0, ymax);
    double slot = (W - 10 - L) / (double)(n_labels ? n_labels : 1), bw = (slot - 8) / (n_sets ? n_sets : 1);
    for (int k = 0; k < n_sets; k++) {
        const char *col = k_colors[k % 8];
        for (int j = 0; j < n_labels; j++) {
            double v = sets[k].v[j];
            if (v < 0) continue;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                    L + slot * j + 4 + bw * k, py(v, ymax), bw, H - B - py(v, ymax), col);
            svg_text(f, labels[j]);
            fprintf(f, ": %.4g</title></rect>\n", v);
        }
        if (sets[k].peak > 0)
            fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"4 3\"/>\n",
                    L, py(sets[k].peak, ymax), W - 10, py(sets[k].peak, ymax), col);
        legend(f, k, sets[k].name);
    }
    for (int j = 0; j < n_labels; j++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"9\">", L + slot * (j + 0.5),
                H - B + 12);
        svg_text(f, labels[j]);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
}

void svg_html_begin(FILE *f, const char *title) {
    fprintf(f, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    svg_text(f, title);
    fprintf(f, "</title>\n<style>body{font:14px sans-serif;margin:24px;max-width:1100px}svg{display:block;"
               "margin:12px 0}pre{white-space:pre-wrap}</style></head><body>\n<h1>");
    svg_text(f, title);
    fprintf(f, "</h1>\n");
}

void svg_html_end(FILE *f) { fprintf(f, "</body></html>\n"); }
