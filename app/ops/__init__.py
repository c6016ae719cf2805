"""Operations helpers: the environment check, a local Redis, the executors' archive."""
