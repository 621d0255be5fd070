# Written by hand: the schema changes apps make after their first migration.
import django.db.models.functions.text
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('shop', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='runner',
            name='club',
            field=models.CharField(default='none', max_length=40),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name='runner',
            name='name',
            field=models.CharField(max_length=200),
        ),
        migrations.RenameField(
            model_name='registration',
            old_name='paid',
            new_name='has_paid',
        ),
        migrations.AddConstraint(
            model_name='runner',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('email'), name='runner_email_ci'),
        ),
        migrations.AlterField(
            model_name='runner',
            name='born',
            field=models.DateField(null=True, db_index=True),
        ),
    ]
