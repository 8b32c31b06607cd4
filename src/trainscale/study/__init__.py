"""A study (one sweep) file to a configuration table, in steps of one module each: :mod:`.spec`
(the records), :mod:`.load` (read and check), :mod:`.grid` (the sweep's grid, block by block),
:mod:`.rules` (derive, filters, validator, memory), :mod:`.expand` (a whole study, with counts),
:mod:`.chunks` (one configuration file per simulate job) and :mod:`.simulate` (one chunk);
:mod:`.sweep` gathers their public names. :mod:`.report` decides what its per-study outputs
show."""
