from django.db import models
from django.db.models.functions import Lower


class Race(models.Model):
    name = models.CharField(max_length=100, unique=True)
    city = models.CharField(max_length=50, db_index=True)
    starts = models.DateTimeField()
    fee = models.DecimalField(max_digits=6, decimal_places=2)
    details = models.JSONField(default=dict)

    class Meta:
        indexes = [models.Index(fields=["city", "starts"])]


class Runner(models.Model):
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=200)
    born = models.DateField(null=True, db_index=True)
    club = models.CharField(max_length=40)

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="runner_email_ci")]


class Registration(models.Model):
    race = models.ForeignKey(Race, on_delete=models.CASCADE, related_name="registrations")
    runner = models.ForeignKey(Runner, on_delete=models.PROTECT)
    bib = models.PositiveIntegerField()
    has_paid = models.BooleanField(default=False)
    registered = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["race", "bib"], name="one_bib_per_race")]
