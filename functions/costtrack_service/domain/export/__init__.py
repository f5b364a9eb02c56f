"""The daily export's rules: where a day goes and what each line holds (the layout), and the
same day in FOCUS 1.2 columns (one mapping of a charge, then one row per event)."""
