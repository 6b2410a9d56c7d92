"""The game's mathematics: exact par sheets of a configured table (docs/par.md).

evaluator: a batch hand evaluator (numpy, precomputed tables); combos and deals: the enumerations; one module per
analysed chapter (mississippi_stud, let_it_ride); fixed: wagers no decision changes; sheet: the figures as data;
render: text, JSON, HTML; analyse: a config's [game] table to its par sheet. Pure: no I/O, no engine state.
"""
