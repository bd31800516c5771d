"""Layer 9, reports for people: number formatting (``format``), terminal tables (``tables``), Markdown
(``markdown``), plots (``plot``) and the files a hit-rate run leaves behind (``outputs``)."""
