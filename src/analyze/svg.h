#pragma once
// A minimal SVG writer for the report's figures: shapes and text appended in drawing order,
// every attribute value escaped, numbers with few digits (files stay small and diffable).
// No scripts, no external references: the markup can be inlined into the HTML report as is.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace triattn {

// Escapes & < > " ' for XML text and attribute values.
std::string xml_escape(std::string_view s);
// A number for an attribute: %.6g ("0.5", "612.35"); non-finite values as 0.
std::string svg_num(double v);

class Svg {
 public:
  Svg(double width, double height, std::string title);

  // Optional extras on any shape: a tooltip (<title>), stroke and fill.
  struct Style {
    std::string fill = "none", stroke = "none";
    double stroke_width = 1, opacity = 1;
    std::string dash;     // stroke-dasharray, "" = solid
    std::string tooltip;  // shown on hover

    static Style filled(std::string colour) {
      Style s;
      s.fill = std::move(colour);
      return s;
    }
    static Style stroked(std::string colour, double width = 1) {
      Style s;
      s.stroke = std::move(colour);
      s.stroke_width = width;
      return s;
    }
    Style dashed(std::string pattern) const {
      Style s = *this;
      s.dash = std::move(pattern);
      return s;
    }
    Style titled(std::string text) const {
      Style s = *this;
      s.tooltip = std::move(text);
      return s;
    }
    Style faded(double o) const {
      Style s = *this;
      s.opacity = o;
      return s;
    }
    Style outlined(std::string colour, double width) const {
      Style s = *this;
      s.stroke = std::move(colour);
      s.stroke_width = width;
      return s;
    }
  };

  void rect(double x, double y, double w, double h, const Style& s);
  void line(double x1, double y1, double x2, double y2, const Style& s);
  void polyline(const std::vector<std::pair<double, double>>& pts, const Style& s);
  void circle(double cx, double cy, double r, const Style& s);
  // anchor: "start", "middle" or "end"; rotate: degrees about (x, y).
  void text(double x, double y, std::string_view s, double size = 12, std::string_view anchor = "start",
            double rotate = 0, std::string_view fill = "#222");

  double width() const { return width_; }
  double height() const { return height_; }
  // The complete <svg> element (with xmlns, so the same text is a valid .svg file).
  std::string str() const;

 private:
  void shape(const std::string& open_tag, const Style& s);
  double width_, height_;
  std::string title_, body_;
};

}  // namespace triattn
