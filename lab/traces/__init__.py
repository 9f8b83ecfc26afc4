"""Real request traces shipped with Steward (README.md beside this file: sources, licences).

A package only so that the CSVs travel with an installed Steward (`pip install .`, the image):
the shipped scenarios and `steward bench trace` read them from here.
"""

from pathlib import Path

TRACES_DIR = Path(__file__).parent
