"""Design review in the editor: the Problems, Bill of materials and Info docks, kept up to
date in the background, and File > Export Design Review (one HTML or PDF report)."""
