"""The wrappers of the gymnasium stand-in: each returns the env it wraps (statistics, video, normalization and
clipping are not what the benchmark is about)."""


def _same(env, *args, **kwargs):
    return env


RecordEpisodeStatistics = RecordVideo = FlattenObservation = ClipAction = NormalizeObservation = _same
TransformObservation = NormalizeReward = TransformReward = _same
