from enum import StrEnum


class DestinationType(StrEnum):
    AMQP = "amqp"
    EVENTBRIDGE = "eventbridge"
    HTTPS = "https"
    S3 = "s3"
    SQS = "sqs"

    def __str__(self) -> str:
        return str(self.value)
