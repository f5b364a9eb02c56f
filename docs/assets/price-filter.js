// The prices page: the box above the table hides the rows that do not contain what is typed.
document$.subscribe(() => {
  const box = document.getElementById("price-filter");
  if (!box) return;
  const rows = Array.from(box.closest("article").querySelectorAll("table tbody tr"));
  box.addEventListener("input", () => {
    const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const row of rows) {
      const text = row.textContent.toLowerCase();
      row.hidden = !words.every((word) => text.includes(word));
    }
  });
});
