"""Code similarity across a class, for instructors: which pairs of hand-ins share code, function by function.

- handins: the class's hand-ins, from a folder (any layout `grade` reads) or from the results store;
- code: each hand-in's functions of the contract (the stub's functions), parsed, never run;
- normalise: one function as tokens that renaming, comments, formatting and reordering barely change;
- fingerprint: winnowed k-gram hashes of those tokens (stable across runs);
- index: an inverted index per function, document-frequency weights, and the pairs' scores;
- compare: all of it for one class; report: pairs.csv and the HTML pages.

Nothing here is written into student feedback; the report presents pairs for a person to look at.
"""
