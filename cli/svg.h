/* svg.h - charts as SVG text, drawn by vkllm itself (no JavaScript, no library), for the HTML
 * and SVG reports of `vkllm compare` and `vkllm bench`. Text is escaped; colours go by series. */
#ifndef CLI_SVG_H
#define CLI_SVG_H

#include <stdio.h>

#define SVG_CHART_W 760 /* every chart's size, in pixels */
#define SVG_CHART_H 320

/* One line of a line chart: n points (x[i], y[i]). */
struct svg_series {
    const char *name;
    int n;
    const double *x, *y;
};
void svg_line_chart(FILE *f, const char *title, const char *x_label, const char *y_label, const struct svg_series *s,
                    int n_series);

/* Grouped bars: for each label, one bar per set (sets[k].v[j] is label j's value in set k, < 0:
 * none); a set's peak > 0 is drawn as a dashed line of its colour. */
struct svg_bar_set {
    const char *name;
    const double *v;
    double peak;
};
void svg_bar_chart(FILE *f, const char *title, const char *y_label, const char *const *labels, int n_labels,
                   const struct svg_bar_set *sets, int n_sets);

/* s with <, >, & and " escaped, for HTML and SVG text. */
void svg_text(FILE *f, const char *s);
/* An HTML page's head with the title (escaped) and a small stylesheet; and its end. */
void svg_html_begin(FILE *f, const char *title);
void svg_html_end(FILE *f);

#endif
