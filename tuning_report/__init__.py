"""The tuning report: one self-contained HTML page per fleet, read from the SQL marts.

marts.py reads the marts (polars, no JVM), figures.py draws them (Plotly), wording.py says
what they mean, page.py lays them out; ``write_report`` is the whole path.
"""
from tuning_report.page import write_report

__all__ = ["write_report"]
