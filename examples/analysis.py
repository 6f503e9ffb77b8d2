# A small analysis for coderun's README: reads data.csv from the workspace,
# prints a summary and writes summary.txt and signups.png, which
# `coderun exec --out DIR` brings back.
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

with open("data.csv", newline="") as f:
    rows = list(csv.DictReader(f))

visitors = [int(r["visitors"]) for r in rows]
signups = [int(r["signups"]) for r in rows]
rate = sum(signups) / sum(visitors)
summary = (
    f"days: {len(rows)}\n"
    f"mean visitors: {sum(visitors) / len(visitors):.1f}\n"
    f"conversion: {rate:.2%}\n"
)
print(summary, end="")
with open("summary.txt", "w") as f:
    f.write(summary)

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar([r["day"][5:] for r in rows], signups)
ax.set_title("Sign-ups per day")
fig.tight_layout()
fig.savefig("signups.png")
print("wrote summary.txt and signups.png")
