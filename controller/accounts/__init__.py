"""Game accounts of an electronic wagering system (605a.2(d)(1)-(2)): a pure ledger and its stored form."""
