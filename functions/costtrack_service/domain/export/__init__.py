"""The daily export's rules: where a day goes and what each line holds (``layout.py``), and the
same day in FOCUS 1.2 columns (``focus.py`` maps a charge, ``focus_rows.py`` writes the rows)."""
