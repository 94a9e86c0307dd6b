"""The customer surface: the calculator, quote requests and their ``/q/`` pages, the language
switch, "How we calculate", the health probes and the customer's error pages
(docs/architecture.md, "What each package owns")."""
