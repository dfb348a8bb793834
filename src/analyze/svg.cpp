#include "analyze/svg.h"

#include <cmath>
#include <cstdio>

namespace triattn {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Svg::Svg(double width, double height, std::string title) : width_(width), height_(height), title_(std::move(title)) {}

void Svg::shape(const std::string& open_tag, const Style& s) {
  body_ += open_tag + " fill=\"" + xml_escape(s.fill) + "\" stroke=\"" + xml_escape(s.stroke) + "\"";
  if (s.stroke != "none") body_ += " stroke-width=\"" + svg_num(s.stroke_width) + "\"";
  if (s.opacity != 1) body_ += " opacity=\"" + svg_num(s.opacity) + "\"";
  if (!s.dash.empty()) body_ += " stroke-dasharray=\"" + xml_escape(s.dash) + "\"";
  const std::string tag = open_tag.substr(1, open_tag.find(' ') - 1);
  body_ += s.tooltip.empty() ? "/>\n" : "><title>" + xml_escape(s.tooltip) + "</title></" + tag + ">\n";
}

void Svg::rect(double x, double y, double w, double h, const Style& s) {
  shape("<rect x=\"" + svg_num(x) + "\" y=\"" + svg_num(y) + "\" width=\"" + svg_num(w) + "\" height=\"" + svg_num(h) + "\"",
        s);
}

void Svg::line(double x1, double y1, double x2, double y2, const Style& s) {
  shape("<line x1=\"" + svg_num(x1) + "\" y1=\"" + svg_num(y1) + "\" x2=\"" + svg_num(x2) + "\" y2=\"" + svg_num(y2) + "\"",
        s);
}

void Svg::polyline(const std::vector<std::pair<double, double>>& pts, const Style& s) {
  std::string p;
  for (const auto& [x, y] : pts) p += (p.empty() ? "" : " ") + svg_num(x) + "," + svg_num(y);
  shape("<polyline points=\"" + p + "\"", s);
}

void Svg::circle(double cx, double cy, double r, const Style& s) {
  shape("<circle cx=\"" + svg_num(cx) + "\" cy=\"" + svg_num(cy) + "\" r=\"" + svg_num(r) + "\"", s);
}

void Svg::text(double x, double y, std::string_view s, double size, std::string_view anchor, double rotate,
               std::string_view fill) {
  body_ += "<text x=\"" + svg_num(x) + "\" y=\"" + svg_num(y) + "\" font-size=\"" + svg_num(size) +
           "\" text-anchor=\"" + xml_escape(anchor) + "\" fill=\"" + xml_escape(fill) + "\"";
  if (rotate != 0)
    body_ += " transform=\"rotate(" + svg_num(rotate) + " " + svg_num(x) + " " + svg_num(y) + ")\"";
  body_ += ">" + xml_escape(s) + "</text>\n";
}

std::string Svg::str() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_num(width_) + "\" height=\"" + svg_num(height_) +
         "\" viewBox=\"0 0 " + svg_num(width_) + " " + svg_num(height_) +
         "\" font-family=\"sans-serif\" role=\"img\" aria-label=\"" + xml_escape(title_) + "\">\n<title>" +
         xml_escape(title_) + "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body_ + "</svg>\n";
}

}  // namespace triattn
